package server

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// FuzzParseConfig proves that no configuration file, however malformed,
// panics the parser, that whatever it accepts normalizes into addresses
// that all carry a valid port, that the node accepts every callback-host
// allow-list and cluster key it accepts, that a memory limit it accepts is
// at least MinMemoryLimit, that a log folder it accepts is trimmed, that
// a log level it accepts is one of the original's six and a log format
// text or json, and that with replication across sites off the node is
// given no remote site. The corpus lives under
// testdata/fuzz/FuzzParseConfig.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(originalLocal))
	f.Add([]byte(originalCluster))
	f.Add([]byte("[sites]\nlocal_site = a\nremote_site = b=10.0.0.2\n"))
	f.Add([]byte("[limits]\nmemory_limit = 2GiB\n"))
	f.Add([]byte("[callbacks]\nallowed_host = cb.example, 127.0.0.0/8, [::1]:80\n[cluster]\nkey = 0123456789abcdef\n"))
	f.Add([]byte("[logging]\nfolder = /var/log/chronos\n[sites]\nremote_site = b=10.0.0.2\nreplicate_timers_across_sites = true\n"))
	f.Add([]byte("[logging]\nlevel = debug\nformat = json\n"))
	f.Add([]byte("[logging]\nlevel = 3\nformat = TEXT\nformat = yaml\n"))
	f.Add([]byte("[logging]\nlevel = Warn\nformat =\n"))
	serial := NewSerial()
	clk, nw := NewClock(clock.NewMock(), serial), NewClient(serial, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := DefaultConfig()
		if err := ParseConfig(data, &cfg); err != nil {
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
			if again, err := withPort("address", a, wire.DefaultPort); err != nil || again != a {
				t.Fatalf("withPort(%q) = %q, %v; want it unchanged", a, again, err)
			}
		}
		if cfg.LogFolder != "" && strings.TrimSpace(cfg.LogFolder) != cfg.LogFolder {
			t.Fatalf("accepted log folder %q with surrounding space", cfg.LogFolder)
		}
		if !slices.Contains(levelsByNumber, cfg.LogLevel) {
			t.Fatalf("accepted log level %v, none of the original's", cfg.LogLevel)
		}
		if cfg.LogFormat != LogText && cfg.LogFormat != LogJSON {
			t.Fatalf("accepted log format %q", cfg.LogFormat)
		}
		if nc := cfg.nodeConfig(nil, nil, nil); !cfg.ReplicateAcrossSites && len(nc.RemoteSites) > 0 {
			t.Fatalf("replication across sites off, yet the node replicates to %v", nc.RemoteSites)
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

// FuzzParseDNSConfig proves that no DNS file, however malformed, panics
// the parser, and that of what it accepts every name resolves without
// panicking (CNAME chains end within MaxCNAMEChain), to IPv4 addresses or
// to a name, never both empty. The corpus lives under
// testdata/fuzz/FuzzParseDNSConfig.
func FuzzParseDNSConfig(f *testing.F) {
	f.Add([]byte(`{"hostnames": [{"name": "cb.example", "records": [{"rrtype": "A", "targets": ["10.0.0.7"]}]}]}`))
	f.Add([]byte(`{"hostnames": [{"name": "a", "records": [{"rrtype": "CNAME", "target": "b"}]}, {"name": "b", "records": [{"rrtype": "CNAME", "target": "a"}]}]}`))
	f.Add([]byte(`{"hostnames": [{"name": "a.", "records": [{"rrtype": "SRV"}, {"rrtype": "CNAME", "target": "B."}]}], "x": null}`))
	f.Add([]byte(`{"hostnames": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, ws, err := ParseDNSConfig(data)
		if err != nil {
			if d != nil || ws != nil {
				t.Fatalf("error %v with records or warnings", err)
			}
			return
		}
		for name := range d.records {
			got, addrs := d.Resolve(name)
			if got == "" {
				t.Fatalf("Resolve(%q) gave no name", name)
			}
			for _, a := range addrs {
				if !a.Is4() {
					t.Fatalf("Resolve(%q) gave %v, not IPv4", name, a)
				}
			}
		}
	})
}
