package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
)

// DNS file limits: real files list a handful of names.
const (
	// MaxDNSNames bounds the names of a DNS file.
	MaxDNSNames = 10_000
	// MaxDNSTargets bounds the addresses of one A record.
	MaxDNSTargets = 64
	// MaxCNAMEChain bounds a chain of CNAME records through the file; a
	// longer one, or a loop, is refused when the file is read.
	MaxCNAMEChain = 8
)

// StaticDNS is the static DNS records of the original's dns.json
// (--dns-config-file): names whose IPv4 addresses the file gives (A
// records) or that stand for another name (CNAME records). An outbound
// connection to a listed name goes where the file says, ahead of the
// system resolver, as the original's resolver consults the file first.
// The file's format:
//
//	{"hostnames": [
//	  {"name": "cb.example", "records": [{"rrtype": "A", "targets": ["10.0.0.7"]}]},
//	  {"name": "site-b.example", "records": [{"rrtype": "CNAME", "target": "local.example"}]}
//	]}
//
// A StaticDNS is never changed once built, so connections may read it
// from any goroutine.
type StaticDNS struct {
	records map[string]dnsRecord
}

// dnsRecord is what the file says of one name: a CNAME target, or the
// addresses of its A record (never both).
type dnsRecord struct {
	cname string
	addrs []netip.Addr
}

// Len is the number of names the file lists.
func (d *StaticDNS) Len() int {
	if d == nil {
		return 0
	}
	return len(d.records)
}

// Resolve returns where a connection to host goes: the addresses the file
// gives it, directly or through CNAME records, or else the name to ask
// the system resolver for (host itself when the file does not list it).
func (d *StaticDNS) Resolve(host string) (name string, addrs []netip.Addr) {
	name = host
	if d == nil {
		return name, nil
	}
	// Chains were bounded when the file was read.
	for range MaxCNAMEChain + 1 {
		r, ok := d.records[dnsKey(name)]
		if !ok {
			return name, nil
		}
		if r.cname == "" {
			return name, r.addrs
		}
		name = r.cname
	}
	panic(fmt.Sprintf("server: CNAME chain from %q longer than %d got past the check", host, MaxCNAMEChain))
}

// dnsKey is the lookup form of a name: lower case, no final dot.
func dnsKey(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

// ReadDNSFile reads the DNS file at path; a file that does not exist
// gives no records, as in the original.
func ReadDNSFile(path string) (*StaticDNS, []Warning, error) {
	data, err := readFile("dns config file", path)
	if errors.Is(err, os.ErrNotExist) {
		if path == DefaultDNSConfigFile {
			return nil, nil, nil
		}
		return nil, []Warning{{File: path, Kind: MissingFile, Message: "DNS config file not found; no static DNS records"}}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	d, ws, err := parseDNS(data, path)
	if err != nil {
		return nil, nil, fmt.Errorf("server: %s: %w", path, err)
	}
	return d, ws, nil
}

// loadDNS reads c.DNSConfigFile, if any, into c.DNS.
func (c *Node) loadDNS() error {
	if c.DNSConfigFile == "" {
		return nil
	}
	d, ws, err := ReadDNSFile(c.DNSConfigFile)
	if err != nil {
		return err
	}
	c.DNS = d
	c.Warnings = append(c.Warnings, ws...)
	return nil
}

// ParseDNSConfig reads a DNS file held in data. Fields and record types
// it does not read are accepted and reported as warnings, with no file
// name; a malformed file or entry is an error naming it.
func ParseDNSConfig(data []byte) (*StaticDNS, []Warning, error) {
	d, ws, err := parseDNS(data, "")
	if err != nil {
		return nil, nil, fmt.Errorf("server: %w", err)
	}
	return d, ws, nil
}

// jsonObject is a JSON object whose members are read one by one, so that
// the unknown ones can be reported.
type jsonObject map[string]json.RawMessage

// dnsParse is the state of reading one DNS file.
type dnsParse struct {
	path string
	d    *StaticDNS
	ws   []Warning
	seen map[string]bool // names listed so far, with records or not
}

func parseDNS(data []byte, path string) (*StaticDNS, []Warning, error) {
	if len(data) > MaxConfigFileBytes {
		return nil, nil, fmt.Errorf("file is larger than %d bytes", MaxConfigFileBytes)
	}
	p := &dnsParse{path: path, d: &StaticDNS{records: map[string]dnsRecord{}}, seen: map[string]bool{}}
	var top jsonObject
	if err := strictJSON(data, &top); err != nil || top == nil {
		return nil, nil, errors.New("not a JSON object")
	}
	p.unknown(top, "", "hostnames")
	var hosts []jsonObject
	if err := strictJSON(top["hostnames"], &hosts); err != nil || !given(top["hostnames"]) {
		return nil, nil, errors.New(`"hostnames" is not an array of objects`)
	}
	if len(hosts) > MaxDNSNames {
		return nil, nil, fmt.Errorf(`"hostnames" lists %d names, more than %d`, len(hosts), MaxDNSNames)
	}
	for i, h := range hosts {
		if err := p.host(fmt.Sprintf("hostnames[%d]", i), h); err != nil {
			return nil, nil, err
		}
	}
	// In name order, so that of several bad chains the same is named.
	names := slices.Sorted(maps.Keys(p.d.records))
	for _, name := range names {
		if err := p.d.checkChain(name); err != nil {
			return nil, nil, err
		}
	}
	return p.d, p.ws, nil
}

// host reads one entry of "hostnames"; at is its path in the file.
func (p *dnsParse) host(at string, h jsonObject) error {
	if h == nil {
		return fmt.Errorf("%s is not an object", at)
	}
	p.unknown(h, at, "name", "records")
	var name string
	if err := strictJSON(h["name"], &name); err != nil || !validDNSName(name) {
		return fmt.Errorf(`%s "name" is not a host name`, at)
	}
	key := dnsKey(name)
	if p.seen[key] {
		return fmt.Errorf("%s: %q is listed twice", at, name)
	}
	p.seen[key] = true
	var records []jsonObject
	if err := strictJSON(h["records"], &records); err != nil || !given(h["records"]) {
		return fmt.Errorf(`%s "records" is not an array of objects`, at)
	}
	var r dnsRecord
	var types []string
	for j, rec := range records {
		rat := fmt.Sprintf("%s.records[%d]", at, j)
		typ, err := p.record(rat, rec, &r)
		if err != nil {
			return err
		}
		if typ == "" {
			continue
		}
		if slices.Contains(types, typ) {
			return fmt.Errorf("%s: %q has a second %s record", rat, name, typ)
		}
		types = append(types, typ)
	}
	if len(types) > 1 {
		return fmt.Errorf("%s: %q has both a CNAME and an A record; a name with a CNAME has no other records", at, name)
	}
	if len(types) == 0 {
		p.warn(at, "records", UnsupportedRecord, "no A or CNAME record; the name is resolved as if it were not listed")
		return nil
	}
	p.d.records[key] = r
	return nil
}

// record reads one record into r and returns its type, or "" for a type
// that is not read.
func (p *dnsParse) record(at string, rec jsonObject, r *dnsRecord) (string, error) {
	if rec == nil {
		return "", fmt.Errorf("%s is not an object", at)
	}
	var typ string
	if err := strictJSON(rec["rrtype"], &typ); err != nil || !given(rec["rrtype"]) {
		return "", fmt.Errorf(`%s "rrtype" is not a string`, at)
	}
	switch typ {
	case "CNAME":
		p.unknown(rec, at, "rrtype", "target")
		var target string
		if err := strictJSON(rec["target"], &target); err != nil || !validDNSName(target) {
			return "", fmt.Errorf(`%s "target" is not a host name`, at)
		}
		r.cname = strings.TrimSuffix(target, ".")
	case "A":
		p.unknown(rec, at, "rrtype", "targets")
		addrs, err := parseTargets(at, rec["targets"])
		if err != nil {
			return "", err
		}
		r.addrs = addrs
	default:
		p.warn(at, "rrtype", UnsupportedRecord, fmt.Sprintf("record type %q not read; only A and CNAME are", typ))
		return "", nil
	}
	return typ, nil
}

// parseTargets reads the addresses of an A record: IPv4 only, at least one.
func parseTargets(at string, raw json.RawMessage) ([]netip.Addr, error) {
	var targets []string
	if err := strictJSON(raw, &targets); err != nil || len(targets) == 0 {
		return nil, fmt.Errorf(`%s "targets" is not a non-empty array of IPv4 addresses`, at)
	}
	if len(targets) > MaxDNSTargets {
		return nil, fmt.Errorf(`%s "targets" lists %d addresses, more than %d`, at, len(targets), MaxDNSTargets)
	}
	addrs := make([]netip.Addr, 0, len(targets))
	for _, t := range targets {
		a, err := netip.ParseAddr(t)
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf(`%s "targets": %q is not an IPv4 address`, at, t)
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// checkChain fails if following CNAME records from name through the file
// loops or takes more than MaxCNAMEChain steps.
func (d *StaticDNS) checkChain(name string) error {
	n := name
	for range MaxCNAMEChain {
		r, ok := d.records[n]
		if !ok || r.cname == "" {
			return nil
		}
		n = dnsKey(r.cname)
	}
	if r, ok := d.records[n]; ok && r.cname != "" {
		return fmt.Errorf("the CNAME records from %q loop or chain more than %d names", name, MaxCNAMEChain)
	}
	return nil
}

// unknown warns of each member of o not in known, in name order (a JSON
// object has none of its own).
func (p *dnsParse) unknown(o jsonObject, at string, known ...string) {
	var names []string
	for k := range o {
		if !slices.Contains(known, k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		p.warn(at, k, UnknownKey, "unknown DNS config field; not read")
	}
}

func (p *dnsParse) warn(at, key string, kind WarningKind, msg string) {
	p.ws = append(p.ws, Warning{File: p.path, Section: at, Key: key, Kind: kind, Message: msg})
}

// strictJSON decodes raw, one JSON value and nothing after it, into v. An
// absent member (nil raw) or null decodes to nothing: callers that need a
// value check given.
func strictJSON(raw json.RawMessage, v any) error {
	if raw == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// given reports whether a member is present and not null.
func given(raw json.RawMessage) bool {
	return raw != nil && string(raw) != "null"
}

// validDNSName reports whether s is a host name the file may list: a
// name, not an IP literal or anything with a port.
func validDNSName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 || strings.Contains(s, ":") {
		return false
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return false
	}
	return validHost(s)
}
