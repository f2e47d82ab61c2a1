package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/chronos-timer/chronos/node"
)

// The Client sends two kinds of request, each over a transport of its
// own: callbacks, to wherever timers point, and requests between nodes.
//
//   - A callback's connection is made only to an address the node's
//     callback policy allows (node.CallbackPolicy.CheckAddr), checked by
//     the dialer's Control hook on the address a host name resolved to,
//     just before it connects: a DNS answer cannot smuggle in a refused
//     address, such as a metadata service's or the node's own.
//   - A request to a peer leaves from the node's own address (its
//     cluster address's IP, when that is one of this machine's), which
//     is how a node without a cluster key recognises its members; with
//     mutual TLS it goes over https, with the node's certificate.

// peerDialer dials peers from local, falling back to the system's
// choice of source address when local cannot be bound here (a cluster
// address behind NAT, say).
type peerDialer struct {
	bound, any *net.Dialer
}

func newPeerDialer(local string) *peerDialer {
	d := &peerDialer{any: &net.Dialer{Timeout: clientDialTimeout, KeepAlive: 30 * time.Second}}
	host, _, err := net.SplitHostPort(local)
	if ip, perr := netip.ParseAddr(host); err == nil && perr == nil && !ip.IsUnspecified() {
		bound := *d.any
		bound.LocalAddr = &net.TCPAddr{IP: ip.AsSlice(), Zone: ip.Zone()}
		d.bound = &bound
	}
	return d
}

// DialContext dials addr from the node's address if it can.
func (d *peerDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.bound != nil {
		conn, err := d.bound.DialContext(ctx, network, addr)
		if !errors.Is(err, syscall.EADDRNOTAVAIL) && !errors.Is(err, syscall.EAFNOSUPPORT) {
			return conn, err
		}
	}
	return d.any.DialContext(ctx, network, addr)
}

// callbackControl is the Control hook of the callbacks' dialer: it
// refuses a connection to an address policy does not allow, before any
// packet is sent.
func callbackControl(policy *node.CallbackPolicy) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("server: callback to %q: not an IP address and port", address)
		}
		if err := policy.CheckAddr(ap); err != nil {
			return fmt.Errorf("server: callback refused: %w", err)
		}
		return nil
	}
}

// SetCallbackPolicy makes the Client's callback connections obey p
// (nil: any address). Connections already open stay.
func (c *Client) SetCallbackPolicy(p *node.CallbackPolicy) {
	if c.dialer == nil {
		return
	}
	var control func(string, string, syscall.RawConn) error
	if p != nil {
		control = callbackControl(p)
	}
	c.dialer.dial = (&net.Dialer{Timeout: clientDialTimeout, KeepAlive: 30 * time.Second, Control: control}).DialContext
}

// setPeerTransport makes the Client send requests between nodes through
// rt; with https, over TLS.
func (c *Client) setPeerTransport(rt http.RoundTripper, https bool) {
	c.peerRT, c.peerHTTPS = rt, https
}

// transport is the round tripper for req, and its URL as sent.
func (c *Client) transport(req node.Request) (http.RoundTripper, string) {
	if kindOf(req) != kindPeer {
		return c.rt, req.URL
	}
	if c.peerHTTPS {
		if rest, ok := strings.CutPrefix(req.URL, "http://"); ok {
			return c.peerRT, "https://" + rest
		}
	}
	return c.peerRT, req.URL
}

// SetPeers makes the Client send requests between nodes from the node's
// own address local (its cluster address), over TLS with tlsConfig when
// that is set. Call it before the first Send.
func (c *Client) SetPeers(local string, tlsConfig *tls.Config) {
	dial := c.peerDial(newPeerDialer(local).DialContext)
	t := newTransport(dial)
	t.TLSClientConfig = tlsConfig
	c.setPeerTransport(t, tlsConfig != nil)
	c.linkDial = &linkDialer{dial: dial, tls: tlsConfig}
}

// UseUnencryptedHTTP2 makes the Client send each request between nodes
// alone, on a stream of its own of one unencrypted HTTP/2 connection per
// peer (prior knowledge: the peer's server must accept it), instead of in
// batches on its workers' own HTTP/1.1 connections. It is the other arm
// of the measurement in docs/design.md section 5 that chose the batches
// (BenchmarkCreateReplicatedH2C); call it after SetPeers, before the first
// Send. Without TLS only: over TLS it changes nothing.
func (c *Client) UseUnencryptedHTTP2() {
	t, ok := c.peerRT.(*http.Transport)
	if !ok || c.peerHTTPS {
		return
	}
	t = t.Clone()
	t.Protocols = new(http.Protocols)
	t.Protocols.SetUnencryptedHTTP2(true)
	c.peerRT, c.linkDial, c.unbatched = t, nil, true
}

// peerDial is dial behind the Client's static DNS records, as callbacks
// are: a remote site may be named by one.
func (c *Client) peerDial(dial func(context.Context, string, string) (net.Conn, error)) func(context.Context, string, string) (net.Conn, error) {
	if c.dialer == nil {
		return dial
	}
	return c.dialer.through(dial).DialContext
}
