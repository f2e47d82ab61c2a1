package config

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// FuzzParse proves that no configuration file, however malformed,
// panics the parser, that whatever it accepts normalizes into addresses
// that all carry a valid port, that the node accepts every callback-host
// allow-list and cluster key it accepts, that a memory limit it accepts is
// at least MinMemoryLimit, that a log folder it accepts is trimmed, that
// a log level it accepts is one of the original's six and a log format
// text or json. The corpus lives under
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte(originalLocal))
	f.Add([]byte(originalCluster))
	f.Add([]byte("[sites]\nlocal_site = a\nremote_site = b=10.0.0.2\n"))
	f.Add([]byte("[limits]\nmemory_limit = 2GiB\n"))
	f.Add([]byte("[callbacks]\nallowed_host = cb.example, 127.0.0.0/8, [::1]:80\n[cluster]\nkey = 0123456789abcdef\n"))
	f.Add([]byte("[logging]\nfolder = /var/log/chronos\n[sites]\nremote_site = b=10.0.0.2\nreplicate_timers_across_sites = true\n"))
	f.Add([]byte("[logging]\nlevel = debug\nformat = json\n"))
	f.Add([]byte("[logging]\nlevel = 3\nformat = TEXT\nformat = yaml\n"))
	f.Add([]byte("[logging]\nlevel = Warn\nformat =\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := Default()
		if err := Parse(data, &cfg); err != nil {
			return
		}
		if err := cfg.Normalize(); err != nil {
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
		if cfg.MemoryLimit != 0 && cfg.MemoryLimit < MinMemoryLimit {
			t.Fatalf("accepted memory limit %d, below %d", cfg.MemoryLimit, MinMemoryLimit)
		}
		// The node's Validate checks these two with CheckKeys and
		// CallbackPolicy; the rest of it needs a clock and a network.
		nc := node.DefaultConfig()
		nc.CallbackHosts, nc.ClusterKey = cfg.CallbackHosts, cfg.ClusterKey
		if err := nc.CheckKeys(); err != nil {
			t.Fatalf("node refuses the key the server accepted: %v", err)
		}
		if _, err := nc.CallbackPolicy(); err != nil {
			t.Fatalf("node refuses the allow-list the server accepted: %v", err)
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
