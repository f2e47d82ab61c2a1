package transport

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/config"
)

// TestCallbackDialObeysThePolicy proves the callbacks' dialer checks the
// address it is about to connect to, after any name is resolved: a name
// the static records point at the node's own address is refused, and so
// is a link-local literal, without a connection (the Control hook runs
// before connect, so nothing is sent to 169.254.169.254); a name pointing
// at an allowed loopback listener connects.
func TestCallbackDialObeysThePolicy(t *testing.T) {
	own, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	other, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, ownPort, _ := net.SplitHostPort(own.Addr().String())
	_, otherPort, _ := net.SplitHostPort(other.Addr().String())
	policy, err := node.NewCallbackPolicy(nil, []string{own.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	records, _, err := config.ParseDNSConfig([]byte(`{"hostnames": [
		{"name": "self.example", "records": [{"rrtype": "A", "targets": ["127.0.0.1"]}]},
		{"name": "sink.example", "records": [{"rrtype": "A", "targets": ["127.0.0.2"]}]}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(newNodeLock().Do, prometheus.NewRegistry(), nil)
	defer c.Close()
	c.SetDNS(records)
	c.SetCallbackPolicy(policy)
	for addr, refused := range map[string]string{
		"self.example:" + ownPort:   "own address",
		"169.254.169.254:80":        "link-local",
		"sink.example:" + otherPort: "",
	} {
		conn, err := c.dialer.DialContext(context.Background(), "tcp", addr)
		switch {
		case refused == "" && err != nil:
			t.Errorf("dial %s: %v, want a connection", addr, err)
		case refused != "" && (err == nil || !strings.Contains(err.Error(), refused)):
			t.Errorf("dial %s: %v, want it refused as %s", addr, err, refused)
		}
		if conn != nil {
			conn.Close()
		}
	}
}

// TestPeersAreDialledFromTheNodesAddress proves a request to a peer
// leaves from the node's own cluster address, so that a node without a
// key tells its members apart on loopback (127.0.0.x), and from the
// system's choice when that address is not this machine's.
func TestPeersAreDialledFromTheNodesAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for local, want := range map[string]string{"127.0.0.3:7253": "127.0.0.3", "192.0.2.1:7253": "127.0.0.1", "peer.example:7253": "127.0.0.1"} {
		conn, err := newPeerDialer(local).DialContext(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("from %s: %v", local, err)
		}
		in, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if host, _, _ := net.SplitHostPort(in.RemoteAddr().String()); host != want {
			t.Errorf("cluster address %s: the peer saw %s, want %s", local, in.RemoteAddr(), want)
		}
		in.Close()
		conn.Close()
	}
}
