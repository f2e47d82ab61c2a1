package node

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strings"
)

// The internal API (replication, pop notices, tombstones, and later
// resync) changes what every replica holds, so a node takes it only from
// nodes that hold the cluster's shared key (Config.ClusterKey). The sender
// proves it holds the key without sending it: HeaderSignature carries the
// HMAC-SHA256, under the key, of the request's method, target and body.
//
// A replayed request passes the check. That is harmless by design: every
// record carries its version and sequence number, so a replayed record is
// either the one held already or an older one, and is not applied.
//
// Without a key the internal API is open to anyone who can reach the node,
// which is only safe when no one else can (a lone node, or a cluster on
// loopback); the production adapter warns about it at start.

// signature returns the hex HMAC-SHA256 of a request under key.
func signature(key, method, url string, body []byte) string {
	return sum(hmac.New(sha256.New, []byte(key)), method, url, body)
}

// sum is signature with a keyed MAC made once (and reset here), since a
// node signs and checks every internal request.
func sum(mac hash.Hash, method, url string, body []byte) string {
	return string(appendSum(nil, mac, method, url, body))
}

// appendSum appends the hex signature of a request to b. What the MAC
// reads goes through b's spare capacity, so a node passing its scratch
// buffer allocates nothing.
func appendSum(b []byte, mac hash.Hash, method, url string, body []byte) []byte {
	mac.Reset()
	start := len(b)
	b = append(append(append(append(b, method...), '\n'), requestTarget(url)...), '\n')
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
	rest, ok := strings.CutPrefix(url, "http://")
	if !ok {
		if rest, ok = strings.CutPrefix(url, "https://"); !ok {
			return url
		}
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return "/"
}

// internalPut builds the internal PUT of body to /timers/<wire> on host,
// signed.
func (n *Node) internalPut(host, wire string, body []byte) Request {
	req := Request{
		Method:  "PUT",
		URL:     "http://" + host + "/timers/" + wire,
		Header:  Header{HeaderContentType: "application/json"},
		Body:    body,
		MaxWait: ReplicaSkew,
	}
	n.sign(&req)
	return req
}

// sign adds the signature of req to it, when the cluster has a key, and
// the node's instance number (see noteInstance).
func (n *Node) sign(req *Request) {
	req.Header.Set(HeaderInstance, n.instanceHeader())
	if n.cfg.ClusterKey != "" {
		n.scratch = appendSum(n.scratch[:0], n.keyMAC(), req.Method, req.URL, req.Body)
		req.Header.Set(HeaderSignature, string(n.scratch))
	}
}

// keyMAC is the node's MAC under the cluster key, made on first use; the
// node is single-threaded, so one serves every request.
func (n *Node) keyMAC() hash.Hash {
	if n.mac == nil {
		n.mac = hmac.New(sha256.New, []byte(n.cfg.ClusterKey))
	}
	return n.mac
}

// authentic reports whether req, an internal request, comes from a holder
// of the cluster key. Without a key every request passes.
func (n *Node) authentic(req Request) bool {
	ok := true
	if n.cfg.ClusterKey != "" {
		n.scratch = appendSum(n.scratch[:0], n.keyMAC(), req.Method, req.URL, req.Body)
		ok = hmac.Equal([]byte(req.Header.Get(HeaderSignature)), n.scratch)
	}
	if ok {
		n.noteInstance(req)
	}
	return ok
}

// errForbidden is the reason an unsigned or wrongly signed internal
// request is refused with.
const errForbidden = "internal API: the request does not carry a valid " + HeaderSignature + " for this cluster's key"

func forbidden(reason string) Response {
	r := text(403, reason)
	r.Header[HeaderReason] = reason
	return r
}
