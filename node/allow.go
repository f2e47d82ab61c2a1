package node

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// hostList is the callback-host allow-list (Config.CallbackHosts). A node
// with one refuses timers whose callbacks would reach any other host, so
// that the service cannot be used to send requests to arbitrary addresses.
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

// refuseCallback answers 400 when the allow-list does not let spec's
// callback be sent. A tombstone has none.
func (n *Node) refuseCallback(spec Spec) (Response, bool) {
	if n.callbacks == nil || spec.Tombstone {
		return Response{}, false
	}
	if u, err := url.Parse(spec.URI); err == nil && n.callbacks.allows(u) {
		return Response{}, false
	}
	return badRequest(fmt.Sprintf("callback.http.uri %q: host is not in this service's allowed callback hosts", spec.URI)), true
}

// allows reports whether a callback to u may be sent. A nil list allows
// every host.
func (l *hostList) allows(u *url.URL) bool {
	if l == nil {
		return true
	}
	host := strings.ToLower(u.Hostname())
	ip, err := netip.ParseAddr(host)
	if err == nil {
		ip = ip.Unmap()
		host = ip.String()
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if l.hosts[host] || l.hostPorts[host+":"+port] {
		return true
	}
	for _, p := range l.prefixes {
		if err == nil && p.Contains(ip) {
			return true
		}
	}
	return false
}
