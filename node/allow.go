package node

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/chronos-timer/chronos/wire"
)

// CallbackPolicy decides which callbacks a node holds and sends, so that
// the service cannot be used to send requests where its operator did not
// mean it to:
//
//   - with an allow-list (Config.CallbackHosts), only the hosts it names;
//   - whatever the list, no link-local address (169.254.0.0/16, fe80::/10:
//     cloud metadata services live there), no unspecified one (0.0.0.0/8,
//     which reaches this very machine, and ::), and none of the node's own
//     addresses (a timer whose callback is the node's /timers would make
//     timers), unless an entry names it: the address itself, that
//     host:port, or a prefix inside the refused range. Loopback and
//     private ranges stay allowed, as in the original.
//
// A node applies it to every record that would enter its store, however
// it came (client write, replication, resync page, repair): a replica
// never holds a callback it would not have taken from a client. A callback
// named by host name is checked again by the production adapter on the
// address the name resolves to, as the connection is made (CheckAddr), so
// a DNS answer cannot smuggle in a refused address.
type CallbackPolicy struct {
	list *hostList // nil: every host
	own  map[string]bool
	// ownPorts are the ports on which every loopback address is the
	// node's own (it listens on an unspecified address).
	ownPorts map[string]bool
}

// NewCallbackPolicy builds the policy of the allow-list entries allowed
// (empty: every host) for a node serving on the host:port addresses own.
// An own address with an unspecified host (0.0.0.0:7253) makes every
// loopback address at its port the node's own.
func NewCallbackPolicy(allowed, own []string) (*CallbackPolicy, error) {
	list, err := parseHostList(allowed)
	if err != nil {
		return nil, err
	}
	p := &CallbackPolicy{list: list, own: map[string]bool{}, ownPorts: map[string]bool{}}
	for _, a := range own {
		host, port := splitHost(strings.ToLower(a))
		if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
			p.ownPorts[port] = true
		}
		p.own[canonicalHost(host)+":"+port] = true
	}
	return p, nil
}

// refusedRanges are the addresses refused unless named explicitly.
var refusedRanges = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified address"},
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
}

// CheckURI returns why a callback to uri may not be held, or nil.
func (p *CallbackPolicy) CheckURI(uri string) error {
	u, err := url.Parse(uri)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("callback.http.uri %q is not an absolute URL with a host", uri)
	}
	host, port := canonicalHost(strings.ToLower(u.Hostname())), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if !p.list.allows(host, port) {
		return fmt.Errorf("callback.http.uri %q: host is not in this service's allowed callback hosts", uri)
	}
	if err := p.check(host, port); err != nil {
		return fmt.Errorf("callback.http.uri %q: %w", uri, err)
	}
	return nil
}

// CheckAddr returns why a callback connection to ap, the address its
// host resolved to, may not be made, or nil.
func (p *CallbackPolicy) CheckAddr(ap netip.AddrPort) error {
	return p.check(ap.Addr().Unmap().String(), strconv.Itoa(int(ap.Port())))
}

// check refuses the node's own addresses and the refused ranges, unless
// the allow-list names them; host is canonical.
func (p *CallbackPolicy) check(host, port string) error {
	ip, err := netip.ParseAddr(host)
	own := p.own[host+":"+port] || err == nil && ip.IsLoopback() && p.ownPorts[port]
	if own && !p.list.names(host, port) {
		return fmt.Errorf("%s:%s is this node's own address; allow it explicitly to use it", host, port)
	}
	if err != nil {
		return nil // a name: checked again on its address as it is dialled
	}
	ip = ip.WithZone("") // a prefix contains no zoned address: fe80::1%eth0 is link-local
	for _, r := range refusedRanges {
		if r.prefix.Contains(ip) && !p.list.namesWithin(ip, port, r.prefix) {
			return fmt.Errorf("%s is %s, refused unless allowed explicitly", host, r.what)
		}
	}
	return nil
}

// canonicalHost writes an IP host as netip does (IPv4-mapped addresses
// unmapped), and leaves a name as it is. A host already written so is
// returned as it is, without a copy.
func canonicalHost(host string) string {
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	var buf [len("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255")]byte
	if b := ip.Unmap().AppendTo(buf[:0]); string(b) != host {
		return string(b)
	}
	return host
}

// refuseCallback answers 400 when the policy does not let spec's
// callback be held. A tombstone has none. The verdict kept for the
// callback's scheme://authority (hostVerdict) answers for a callback it
// allows, so a create does not parse its URL again after the wire did;
// a refusal, or a URI with no such part, is checked whole, so that the
// answer names the URI the client gave.
func (n *Node) refuseCallback(spec wire.Timer) (Response, bool) {
	if deletes(spec) {
		return Response{}, false
	}
	if host, _ := splitCallbackHost(spec.URI); host != "" && n.hostVerdict(host) == nil {
		return Response{}, false
	}
	if err := n.callbacks.CheckURI(spec.URI); err != nil {
		n.stats.CallbacksRefused++
		return badRequest(err.Error()), true
	}
	return Response{}, false
}

// refuseRecord returns the 400 that refuses t, a record about to enter
// the store, when it is live with a callback the policy forbids, or nil:
// the one check every path into the store shares (see apply). Only a
// refusal allocates its answer.
func (n *Node) refuseRecord(t *Timer) *Response {
	if t.State != Live {
		return nil
	}
	if t.host() == nil {
		if resp, refused := n.refuseCallback(wire.Timer{URI: t.CallbackURI()}); refused {
			return &resp
		}
		return nil
	}
	if err := n.hostVerdict(*t.host()); err != nil {
		n.stats.CallbacksRefused++
		resp := badRequest(err.Error())
		return &resp
	}
	return nil
}

// hostVerdict is the policy's verdict on a callback to host, its
// scheme://authority (splitCallbackHost). The verdict depends on that
// part only, which records share interned, so it is kept per host, at
// most maxCallbackHosts of them; the key is a copy, so that a host cut
// from a request's URI does not keep the request alive.
func (n *Node) hostVerdict(host string) error {
	err, ok := n.hostVerdicts[host]
	if !ok {
		if len(n.hostVerdicts) >= maxCallbackHosts {
			clear(n.hostVerdicts)
		}
		err = n.callbacks.CheckURI(host)
		n.hostVerdicts[strings.Clone(host)] = err
	}
	return err
}

// hostList is the callback-host allow-list (Config.CallbackHosts).
type hostList struct {
	hosts     map[string]bool // "name" or "ip", any port
	hostPorts map[string]bool // "name:port"
	prefixes  []netip.Prefix
}

// parseHostList reads the allow-list entries; nil means every host.
func parseHostList(entries []string) (*hostList, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	l := &hostList{hosts: map[string]bool{}, hostPorts: map[string]bool{}}
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		if p, err := netip.ParsePrefix(e); err == nil {
			l.prefixes = append(l.prefixes, p.Masked())
			continue
		}
		if host, port, ok := splitHostPort(e); ok {
			l.hostPorts[host+":"+strconv.Itoa(port)] = true
			continue
		}
		host := strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")
		ip, err := netip.ParseAddr(host)
		switch {
		case err == nil:
			host = ip.Unmap().String()
		case host == "" || strings.ContainsAny(host, "/[]@?#%: "):
			return nil, fmt.Errorf("node: config CallbackHosts entry %q is not a host, host:port or IP prefix", e)
		}
		l.hosts[host] = true
	}
	return l, nil
}

// splitHostPort splits "host:port" and "[v6]:port"; ok is false for a bare
// host or IPv6 literal.
func splitHostPort(s string) (host string, port int, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 || strings.Count(s, ":") > 1 && !strings.HasPrefix(s, "[") {
		return "", 0, false
	}
	host = strings.TrimSuffix(strings.TrimPrefix(s[:i], "["), "]")
	p, err := strconv.Atoi(s[i+1:])
	if err != nil || p < 1 || p > 65535 || host == "" {
		return "", 0, false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	}
	return host, p, true
}

// allows reports whether the list lets a callback reach host (canonical)
// on port. A nil list allows every host.
func (l *hostList) allows(host, port string) bool {
	if l == nil || l.names(host, port) {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	for _, p := range l.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// names reports whether an entry names host itself, or host and port.
func (l *hostList) names(host, port string) bool {
	return l != nil && (l.hosts[host] || l.hostPorts[host+":"+port])
}

// namesWithin reports whether an entry names ip (with any port, or
// port), or is a prefix inside r, which the entry then allows explicitly:
// a blanket prefix such as 0.0.0.0/0 does not.
func (l *hostList) namesWithin(ip netip.Addr, port string, r netip.Prefix) bool {
	if l.names(ip.String(), port) {
		return true
	}
	if l == nil {
		return false
	}
	for _, p := range l.prefixes {
		if p.Bits() >= r.Bits() && r.Contains(p.Addr()) && p.Contains(ip) {
			return true
		}
	}
	return false
}
