package config

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// TestParseDNSConfig proves what the DNS file gives each name: A records'
// addresses, CNAME targets (followed through the file), names compared
// without case or final dot, and unlisted names left to the system
// resolver.
func TestParseDNSConfig(t *testing.T) {
	d, ws, err := ParseDNSConfig([]byte(`{"hostnames": [
		{"name": "cb.example", "records": [{"rrtype": "A", "targets": ["10.0.0.7", "10.0.0.8"]}]},
		{"name": "Alias.Example.", "records": [{"rrtype": "CNAME", "target": "cb.example"}]},
		{"name": "outside.example", "records": [{"rrtype": "CNAME", "target": "elsewhere.example."}]},
		{"name": "alias2.example", "records": [{"rrtype": "CNAME", "target": "ALIAS.example"}]}
	]}`))
	if err != nil || len(ws) != 0 {
		t.Fatalf("ParseDNSConfig: %v, warnings %+v; want no error or warning", err, ws)
	}
	both := []netip.Addr{netip.MustParseAddr("10.0.0.7"), netip.MustParseAddr("10.0.0.8")}
	tests := []struct {
		host, name string
		addrs      []netip.Addr
	}{
		{"cb.example", "cb.example", both},
		{"CB.example.", "CB.example.", both},
		{"alias.example", "cb.example", both},
		{"alias2.example", "cb.example", both},
		{"outside.example", "elsewhere.example", nil},
		{"unlisted.example", "unlisted.example", nil},
		{"10.0.0.1", "10.0.0.1", nil},
	}
	for _, tt := range tests {
		name, addrs := d.Resolve(tt.host)
		if name != tt.name || !reflect.DeepEqual(addrs, tt.addrs) {
			t.Errorf("Resolve(%q) = %q, %v; want %q, %v", tt.host, name, addrs, tt.name, tt.addrs)
		}
	}
	if got := d.Len(); got != 4 {
		t.Errorf("Len() = %d, want 4", got)
	}
	var none *StaticDNS
	if name, addrs := none.Resolve("cb.example"); name != "cb.example" || addrs != nil || none.Len() != 0 {
		t.Errorf("nil StaticDNS resolves cb.example to %q, %v; want it unchanged", name, addrs)
	}
}

// TestParseDNSConfigWarnings proves that what the original accepts but
// this implementation does not read is accepted with a warning naming
// where it is: unknown fields, record types other than A and CNAME, a
// name with no record read.
func TestParseDNSConfigWarnings(t *testing.T) {
	d, ws, err := ParseDNSConfig([]byte(`{"hostnames": [
		{"name": "a.example", "ttl": 5, "records": [{"rrtype": "A", "targets": ["10.0.0.7"], "weight": 1}, {"rrtype": "AAAA", "targets": ["::1"]}]},
		{"name": "srv.example", "records": [{"rrtype": "SRV"}]}
	], "version": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	type w struct {
		section, key string
		kind         WarningKind
	}
	want := []w{
		{"", "version", UnknownKey},
		{"hostnames[0]", "ttl", UnknownKey},
		{"hostnames[0].records[0]", "weight", UnknownKey},
		{"hostnames[0].records[1]", "rrtype", UnsupportedRecord},
		{"hostnames[1].records[0]", "rrtype", UnsupportedRecord},
		{"hostnames[1]", "records", UnsupportedRecord},
	}
	var got []w
	for _, x := range ws {
		got = append(got, w{x.Section, x.Key, x.Kind})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings\n got %+v\nwant %+v", got, want)
	}
	if d.Len() != 1 {
		t.Errorf("Len() = %d, want 1 (srv.example has no record read)", d.Len())
	}
}

// TestParseDNSConfigErrors proves that a malformed file or entry is
// refused with an error naming where it is.
func TestParseDNSConfigErrors(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"not JSON", `{"hostnames": [`, "not a JSON object"},
		{"an array", `[]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"trailing data", `{"hostnames": []} {}`, "not a JSON object"},
		{"no hostnames", `{}`, `"hostnames" is not an array of objects`},
		{"hostnames null", `{"hostnames": null}`, `"hostnames" is not an array of objects`},
		{"hostnames of strings", `{"hostnames": ["a"]}`, `"hostnames" is not an array of objects`},
		{"entry null", `{"hostnames": [null]}`, "hostnames[0] is not an object"},
		{"no name", `{"hostnames": [{"records": []}]}`, `hostnames[0] "name" is not a host name`},
		{"name an IP", `{"hostnames": [{"name": "10.0.0.1", "records": []}]}`, `hostnames[0] "name" is not a host name`},
		{"name with a port", `{"hostnames": [{"name": "a.example:80", "records": []}]}`, `hostnames[0] "name" is not a host name`},
		{"name with a space", `{"hostnames": [{"name": "a example", "records": []}]}`, `hostnames[0] "name" is not a host name`},
		{"no records", `{"hostnames": [{"name": "a.example"}]}`, `hostnames[0] "records" is not an array of objects`},
		{"name twice", `{"hostnames": [{"name": "a.example", "records": []}, {"name": "A.example.", "records": []}]}`, `hostnames[1]: "A.example." is listed twice`},
		{"no rrtype", `{"hostnames": [{"name": "a", "records": [{"target": "b"}]}]}`, `hostnames[0].records[0] "rrtype" is not a string`},
		{"CNAME without target", `{"hostnames": [{"name": "a", "records": [{"rrtype": "CNAME"}]}]}`, `hostnames[0].records[0] "target" is not a host name`},
		{"CNAME to an IP", `{"hostnames": [{"name": "a", "records": [{"rrtype": "CNAME", "target": "10.0.0.1"}]}]}`, `"target" is not a host name`},
		{"A without targets", `{"hostnames": [{"name": "a", "records": [{"rrtype": "A"}]}]}`, `hostnames[0].records[0] "targets" is not a non-empty array`},
		{"A with no targets", `{"hostnames": [{"name": "a", "records": [{"rrtype": "A", "targets": []}]}]}`, `"targets" is not a non-empty array`},
		{"A with IPv6", `{"hostnames": [{"name": "a", "records": [{"rrtype": "A", "targets": ["::1"]}]}]}`, `"targets": "::1" is not an IPv4 address`},
		{"A with a name", `{"hostnames": [{"name": "a", "records": [{"rrtype": "A", "targets": ["b.example"]}]}]}`, `"b.example" is not an IPv4 address`},
		{"two CNAMEs", `{"hostnames": [{"name": "a", "records": [{"rrtype": "CNAME", "target": "b"}, {"rrtype": "CNAME", "target": "c"}]}]}`, `hostnames[0].records[1]: "a" has a second CNAME record`},
		{"CNAME and A", `{"hostnames": [{"name": "a", "records": [{"rrtype": "CNAME", "target": "b"}, {"rrtype": "A", "targets": ["10.0.0.1"]}]}]}`, `"a" has both a CNAME and an A record`},
		{"CNAME loop", `{"hostnames": [{"name": "a", "records": [{"rrtype": "CNAME", "target": "b"}]}, {"name": "b", "records": [{"rrtype": "CNAME", "target": "a."}]}]}`, `the CNAME records from "a" loop`},
		{"CNAME to itself", `{"hostnames": [{"name": "a", "records": [{"rrtype": "CNAME", "target": "A"}]}]}`, `the CNAME records from "a" loop`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseDNSConfig([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "server: ") {
				t.Fatalf("error = %v, want one starting %q and containing %q", err, "server: ", tt.want)
			}
		})
	}
}

// TestCNAMEChainLimit proves that a chain of exactly MaxCNAMEChain CNAME
// records through the file is accepted and resolved, and one more is
// refused.
func TestCNAMEChainLimit(t *testing.T) {
	chain := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"hostnames": [`)
		for i := range n {
			b.WriteString(`{"name": "n` + string(rune('a'+i)) + `", "records": [{"rrtype": "CNAME", "target": "n` + string(rune('a'+i+1)) + `"}]},`)
		}
		b.WriteString(`{"name": "n` + string(rune('a'+n)) + `", "records": [{"rrtype": "A", "targets": ["10.0.0.1"]}]}]}`)
		return b.String()
	}
	d, _, err := ParseDNSConfig([]byte(chain(MaxCNAMEChain)))
	if err != nil {
		t.Fatal(err)
	}
	if name, addrs := d.Resolve("na"); len(addrs) != 1 {
		t.Errorf("Resolve(na) = %q, %v; want the address at the end of the chain", name, addrs)
	}
	if _, _, err := ParseDNSConfig([]byte(chain(MaxCNAMEChain + 1))); err == nil || !strings.Contains(err.Error(), "chain more than") {
		t.Errorf("chain of %d: error %v, want it refused", MaxCNAMEChain+1, err)
	}
}
