package server

import (
	"testing"
)

// TestReloadDNS proves that the server's client takes the DNS file's
// records at start and again on ReloadDNS, and keeps the current ones
// when the file has become malformed.
func TestReloadDNS(t *testing.T) {
	const one = `{"hostnames": [{"name": "a.example", "records": [{"rrtype": "A", "targets": ["10.0.0.1"]}]}]}`
	const two = `{"hostnames": [{"name": "a.example", "records": [{"rrtype": "A", "targets": ["10.0.0.1"]}]},
		{"name": "b.example", "records": [{"rrtype": "CNAME", "target": "a.example"}]}]}`
	path := writeFile(t, t.TempDir(), "dns.json", one)
	cfg, err := parseAndLoad(append(noFiles, "--dns-config-file", path))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.shutdown()
	names := func() int { return srv.client.DNS().Len() }
	if got := names(); got != 1 {
		t.Fatalf("names at start %d, want 1", got)
	}
	writeFile(t, "", path, two)
	if err := srv.ReloadDNS(); err != nil || names() != 2 {
		t.Fatalf("after reload: %v, %d names; want 2", err, names())
	}
	writeFile(t, "", path, `{"hostnames": [`)
	if err := srv.ReloadDNS(); err == nil || names() != 2 {
		t.Errorf("malformed file: %v, %d names; want an error and the 2 names kept", err, names())
	}
}
