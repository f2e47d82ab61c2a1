package transport

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/chronos-timer/chronos/server/config"
)

// dnsDialer opens the Client's connections: to the addresses the static
// DNS records give a name, or else through the system resolver. The
// records may be replaced while connections are being opened (SetDNS).
type dnsDialer struct {
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	static *atomic.Pointer[config.StaticDNS]
}

func newDNSDialer() *dnsDialer {
	return &dnsDialer{dial: (&net.Dialer{Timeout: clientDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		static: new(atomic.Pointer[config.StaticDNS])}
}

// through returns a dialer that resolves through d's static records
// (shared: SetDNS changes both) and dials with dial.
func (d *dnsDialer) through(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *dnsDialer {
	return &dnsDialer{dial: dial, static: d.static}
}

// DialContext dials addr (host:port), its host resolved through the
// static records first. Of several addresses the first that answers is
// used, each with its own dial timeout, as the system resolver's are.
func (d *dnsDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return d.dial(ctx, network, addr)
	}
	name, addrs := d.static.Load().Resolve(host)
	if len(addrs) == 0 {
		return d.dial(ctx, network, net.JoinHostPort(name, port))
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return d.dial(ctx, network, addr)
	}
	var errs []error
	for _, a := range addrs {
		conn, err := d.dial(ctx, network, netip.AddrPortFrom(a, uint16(p)).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// SetDNS makes the Client's new connections consult d (nil: no static
// records) before the system resolver. Connections already open stay
// where they are.
func (c *Client) SetDNS(d *config.StaticDNS) {
	if c.dialer != nil {
		c.dialer.static.Store(d)
	}
}

// DNS returns the static records the Client's new connections consult,
// nil for none.
func (c *Client) DNS() *config.StaticDNS {
	if c.dialer == nil {
		return nil
	}
	return c.dialer.static.Load()
}
