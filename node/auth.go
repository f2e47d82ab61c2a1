package node

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// The internal API (replication, pop notices, tombstones, references,
// reads of a replica's copy and resync pages) changes or reveals what
// every replica holds, so a node takes it only from its cluster.
//
// Every internal request carries when it was sent, on its sender's clock
// (HeaderSent, Unix ms), and the member it is addressed to (HeaderTo). A
// receiver refuses, whatever the key, a request addressed to another
// member, one sent more than MaxMessageAge + MaxClockSkew ago (late, or
// replayed), and one dated more than MaxClockSkew ahead of its own clock.
// A tombstone outlives that window (TombstoneLife), so no late or
// replayed write can meet an expired tombstone and bring a deleted timer
// back (docs/design.md 4.13).
//
// With a cluster key (Config.ClusterKey) the sender proves it holds the
// key without sending it: HeaderSignature carries the HMAC-SHA256, under
// the key, of the method, the target, the send time, the destination and
// the body, so neither time nor destination can be changed and a request
// signed for one node is refused by every other. During a rotation a
// second key (Config.AcceptedKey) is accepted too.
//
// Without a key a node takes internal requests only from its members' and
// remote sites' IP addresses (Request.Remote), and a lone node from none;
// the production adapter warns at start that anyone who can send from
// such an address can write to it.

// stamp is what an internal request says of itself, besides its
// signature: when it was sent (sender's clock, Unix ms) and to whom.
type stamp struct {
	sent int64
	to   string
}

// maxDestinationBytes bounds HeaderTo: an address, or a site's name.
const maxDestinationBytes = 512

// sitePrefix starts the destination of a forward to a remote site, which
// any node of the site may take: "site=<name>". No host:port holds '='.
const sitePrefix = "site="

// parseStamp reads the send time and destination of an internal request.
// The reason names the header at fault.
func parseStamp(h Header) (stamp, error) {
	ms, err := parseMillis(HeaderSent, h.Get(HeaderSent))
	if err != nil {
		return stamp{}, err
	}
	to := h.Get(HeaderTo)
	if to == "" || len(to) > maxDestinationBytes {
		return stamp{}, fmt.Errorf("%s is missing or longer than %d bytes", HeaderTo, maxDestinationBytes)
	}
	return stamp{sent: ms, to: to}, nil
}

// signature returns the hex HMAC-SHA256 of a request under key.
func signature(key, method, url string, s stamp, body []byte) string {
	return string(appendSum(nil, hmac.New(sha256.New, []byte(key)), method, url, s, body))
}

// appendSum appends the hex signature of a request to b. What the MAC
// reads goes through b's spare capacity, so a node passing its scratch
// buffer allocates nothing. The signed string is the method, the target,
// the send time and the destination, a line each, then the body: only
// the body, last, may hold a newline.
func appendSum(b []byte, mac hash.Hash, method, url string, s stamp, body []byte) []byte {
	mac.Reset()
	start := len(b)
	b = append(append(append(append(b, method...), '\n'), requestTarget(url)...), '\n')
	b = append(append(append(strconv.AppendInt(b, s.sent, 10), '\n'), s.to...), '\n')
	mac.Write(b[start:])
	mac.Write(body)
	b = mac.Sum(b[:start])
	var digest [sha256.Size]byte
	copy(digest[:], b[start:])
	return hex.AppendEncode(b[:start], digest[:])
}

// requestTarget is the part of url a server sees as the request target:
// the path and query of an absolute http(s) URL, or url itself.
func requestTarget(url string) string {
	_, target := splitURL(url)
	return target
}

// splitURL splits an absolute http(s) URL into its host:port and its
// request target; a bare target has no host.
func splitURL(url string) (host, target string) {
	rest, ok := strings.CutPrefix(url, "http://")
	if !ok {
		if rest, ok = strings.CutPrefix(url, "https://"); !ok {
			return "", url
		}
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[:i], rest[i:]
	}
	return rest, "/"
}

// internalPut builds the internal PUT of body to /timers/<wire ID of id
// and bloom> on host, stamped and signed. The URL is written in one go:
// every replication message builds one.
func (n *Node) internalPut(host string, id, bloom uint64, body []byte) Request {
	var buf [128]byte
	url := append(append(append(buf[:0], "http://"...), host...), "/timers/"...)
	req := Request{
		Method:  "PUT",
		URL:     string(wire.AppendWireID(url, id, bloom)),
		Header:  Header{HeaderContentType: "application/json"},
		Body:    body,
		MaxWait: ReplicaSkew,
	}
	n.sign(&req)
	return req
}

// sign stamps req, an internal request about to be sent, with the time
// and its destination, and signs it when the cluster has a key; it also
// tells the node's instance number (see noteInstance). It is called as
// the request is handed to the network, never earlier: the stamp is what
// bounds its age (TestInternalRequestsAreStampedWhenSent).
func (n *Node) sign(req *Request) {
	req.Header.Set(HeaderInstance, n.instanceHeader)
	host, _ := splitURL(req.URL)
	s := stamp{sent: n.nowMs(), to: n.destination(host)}
	req.Header.Set(HeaderSent, strconv.FormatInt(s.sent, 10))
	req.Header.Set(HeaderTo, s.to)
	if len(n.macs) > 0 {
		n.scratch = appendSum(n.scratch[:0], n.macs[0], req.Method, req.URL, s, req.Body)
		req.Header.Set(HeaderSignature, string(n.scratch))
	}
}

// destination is what HeaderTo says of a request to host: the member's
// address, or for a remote site's address the site's name.
func (n *Node) destination(host string) string {
	for _, s := range n.cfg.RemoteSites {
		if s.Address == host {
			return sitePrefix + s.Name
		}
	}
	return host
}

// newMACs makes the node's MACs under its keys, the signing key first;
// the node is single-threaded, so one of each serves every request.
func newMACs(cfg Config) []hash.Hash {
	var macs []hash.Hash
	for _, k := range []string{cfg.ClusterKey, cfg.AcceptedKey} {
		if k != "" {
			macs = append(macs, hmac.New(sha256.New, []byte(k)))
		}
	}
	return macs
}

// Reasons of the refusals of internal requests.
const (
	errForbidden = "internal API: the request does not carry a valid " + HeaderSignature + " for this cluster's key"
	errNotMember = "internal API: this node has no cluster key and takes internal requests only from its members' addresses"
)

// admit decides whether req, an internal request, is taken: it comes
// from the cluster (signed under a key this node accepts, or, without
// a key, from a member's address), is addressed to this node, and is
// recent. Otherwise the answer is a 403 saying why, counted.
func (n *Node) admit(req Request) (Response, bool) {
	if len(n.macs) == 0 && !n.fromMember(req.Remote) {
		n.stats.Forbidden++
		return forbidden(fmt.Sprintf("%s; %q is not one", errNotMember, req.Remote)), false
	}
	s, err := parseStamp(req.Header)
	if err != nil {
		n.stats.Forbidden++
		return forbidden("internal API: " + err.Error()), false
	}
	if len(n.macs) > 0 && !n.signed(req, s) {
		n.stats.Forbidden++
		return forbidden(errForbidden), false
	}
	if s.to != n.self && s.to != sitePrefix+n.cfg.LocalSite {
		n.stats.Misaddressed++
		return forbidden(fmt.Sprintf("internal API: the request is addressed to %.100q, not to this node (%s)", s.to, n.self)), false
	}
	if reason := n.outsideWindow(s.sent); reason != "" {
		n.stats.Stale++
		return forbidden("internal API: " + reason), false
	}
	n.noteInstance(req)
	return Response{}, true
}

// signed reports whether req carries the signature of s under one of the
// node's keys.
func (n *Node) signed(req Request, s stamp) bool {
	got := []byte(req.Header.Get(HeaderSignature))
	for _, mac := range n.macs {
		n.scratch = appendSum(n.scratch[:0], mac, req.Method, req.URL, s, req.Body)
		if hmac.Equal(got, n.scratch) {
			return true
		}
	}
	return false
}

// outsideWindow says why a request sent at sent (Unix ms, its sender's
// clock) is too old or too far ahead to take, or "".
func (n *Node) outsideWindow(sent int64) string {
	skew, age := n.cfg.MaxClockSkew, n.cfg.MaxMessageAge
	// Compared in milliseconds: both times are at least 0, so the
	// difference cannot overflow, where a Duration of it could.
	switch d := n.nowMs() - sent; {
	case d > (age + skew).Milliseconds():
		return fmt.Sprintf("the request was sent %v ago, more than MaxMessageAge %v plus MaxClockSkew %v: refused as late or replayed", millis(d), age, skew)
	case -d > skew.Milliseconds():
		return fmt.Sprintf("the request is dated %v ahead of this node's clock, more than MaxClockSkew %v", millis(-d), skew)
	}
	return ""
}

// millis is ms milliseconds as a Duration, saturated where it would
// overflow.
func millis(ms int64) time.Duration {
	const most = math.MaxInt64 / int64(time.Millisecond)
	return time.Duration(min(max(ms, -most), most)) * time.Millisecond
}

// tombstoneMin is the least life of a tombstone: TombstoneMin, and
// longer than any internal request may still be taken after it was sent
// (MaxMessageAge plus MaxClockSkew on the receiver's side, and another
// MaxClockSkew for the sender's clock running ahead of the receiver's
// when it dated the request), so that a write sent before the delete,
// delivered late or replayed, is refused or meets the tombstone: it can
// never find the timer forgotten and bring it back.
func (n *Node) tombstoneMin() time.Duration {
	return max(TombstoneMin, n.cfg.MaxMessageAge+2*n.cfg.MaxClockSkew)
}

// fromMember reports whether remote ("ip:port") is the address of another
// member or of a remote site. Members named by host name never match: a
// node cannot resolve names, and a cluster named so needs a key.
func (n *Node) fromMember(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	return err == nil && n.peerIPs[ap.Addr().Unmap()]
}

// peerAddrs returns the IP addresses of the members of m other than this
// node, and of its remote sites.
func (n *Node) peerAddrs(m Membership) map[netip.Addr]bool {
	ips := map[netip.Addr]bool{}
	add := func(addr string) {
		host, _ := splitHost(addr)
		if ip, err := netip.ParseAddr(host); err == nil {
			ips[ip.Unmap()] = true
		}
	}
	for _, a := range m.All() {
		if a != n.self {
			add(a)
		}
	}
	for _, s := range n.cfg.RemoteSites {
		add(s.Address)
	}
	return ips
}

// splitHost splits "host:port" or "[v6]:port" into the host, brackets
// removed, and the port ("" when there is none).
func splitHost(addr string) (host, port string) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 || strings.Count(addr, ":") > 1 && !strings.HasPrefix(addr, "[") {
		return strings.Trim(addr, "[]"), ""
	}
	return strings.Trim(addr[:i], "[]"), addr[i+1:]
}

func forbidden(reason string) Response {
	r := text(403, reason)
	r.Header[wire.HeaderReason] = headerReason(reason)
	return r
}

// refuseInternal answers a refused internal request. Each internal
// endpoint calls admit first.
func (n *Node) refuseInternal(req Request, reply func(Response)) bool {
	resp, ok := n.admit(req)
	if !ok {
		reply(resp)
	}
	return !ok
}

// expired answers 408 when req, a client write, carries a deadline
// (HeaderDeadline) that has passed on this node's clock: its client has
// stopped waiting, and may have written again elsewhere. A malformed
// deadline is a 400.
func (n *Node) expired(req Request) (Response, bool) {
	d := req.Header.Get(wire.HeaderDeadline)
	if d == "" {
		return Response{}, false
	}
	deadline, err := parseMillis(wire.HeaderDeadline, d)
	if err != nil {
		return badRequest(err.Error()), true
	}
	now := n.nowMs()
	if now <= deadline {
		return Response{}, false
	}
	n.stats.DeadlinePassed++
	reason := fmt.Sprintf("the write's deadline (%s) passed %v ago on this node's clock: not applied", wire.HeaderDeadline, millis(now-deadline))
	r := text(408, reason)
	r.Header[wire.HeaderReason] = reason
	return r, true
}

// parseMillis reads the value v of the header name, a time in Unix
// milliseconds: decimal digits only, no sign.
func parseMillis(name, v string) (int64, error) {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || strings.Trim(v, "0123456789") != "" {
		return 0, fmt.Errorf("%s %.40q is not a time in Unix milliseconds", name, v)
	}
	return ms, nil
}

// SetKeys replaces the cluster keys (a configuration reload, such as a
// step of a key rotation): requests are signed with key from now on, and
// taken signed with key or accepted. Empty key leaves the internal API to
// the members' addresses.
func (n *Node) SetKeys(key, accepted string) error {
	c := n.cfg
	c.ClusterKey, c.AcceptedKey = key, accepted
	if err := c.CheckKeys(); err != nil {
		return err
	}
	n.cfg, n.macs = c, newMACs(c)
	return nil
}
