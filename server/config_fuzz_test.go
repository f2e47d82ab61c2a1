package server

import (
	"net"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/chronos-timer/chronos/node"
)

// FuzzParseConfig proves that no configuration file, however malformed,
// panics the parsers, that whatever they accept normalizes into addresses
// that all carry a valid port, and that the node accepts every
// callback-host allow-list and cluster key they accept, and that a memory
// limit they accept is at least MinMemoryLimit. The corpus lives
// under testdata/fuzz/FuzzParseConfig.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(originalLocal))
	f.Add([]byte(originalCluster))
	f.Add([]byte("[sites]\nlocal_site = a\nremote_site = b=10.0.0.2\n"))
	f.Add([]byte("[limits]\nmemory_limit = 2GiB\n"))
	f.Add([]byte("[callbacks]\nallowed_host = cb.example, 127.0.0.0/8, [::1]:80\n[cluster]\nkey = 0123456789abcdef\n"))
	serial := NewSerial()
	clk, nw := NewClock(clock.NewMock(), serial), NewClient(serial, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := DefaultConfig()
		if err := ParseLocalConfig(data, &cfg); err != nil {
			return
		}
		if err := ParseClusterConfig(data, &cfg); err != nil {
			return
		}
		if err := cfg.normalize(); err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			return
		}
		addrs := append([]string{cfg.Localhost}, cfg.Cluster.Nodes...)
		addrs = append(addrs, cfg.Cluster.Joining...)
		addrs = append(addrs, cfg.Cluster.Leaving...)
		for _, s := range cfg.RemoteSites {
			addrs = append(addrs, s.Address)
		}
		for _, a := range addrs {
			if _, _, err := net.SplitHostPort(a); err != nil {
				t.Fatalf("accepted address %q has no port: %v", a, err)
			}
			if again, err := withPort("address", a); err != nil || again != a {
				t.Fatalf("withPort(%q) = %q, %v; want it unchanged", a, again, err)
			}
		}
		if cfg.MemoryLimit != 0 && cfg.MemoryLimit < MinMemoryLimit {
			t.Fatalf("accepted memory limit %d, below %d", cfg.MemoryLimit, MinMemoryLimit)
		}
		nc := node.DefaultConfig()
		nc.CallbackHosts, nc.ClusterKey = cfg.CallbackHosts, cfg.ClusterKey
		nc.Clock, nc.Network = clk, nw
		if err := nc.Validate(); err != nil {
			t.Fatalf("node refuses what the server accepted: %v", err)
		}
	})
}
