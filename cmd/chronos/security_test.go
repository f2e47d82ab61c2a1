package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/certtest"
	"github.com/chronos-timer/chronos/internal/proctest"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// The tests of the threat model of docs/operations.md (Security), tried
// on real processes the way an attacker would, each on loopback
// addresses of its own (127.0.0.x).

const testKey = "security-test-key-0123456789"

// freeOn returns ip:port with a port that was free on ip a moment ago.
func freeOn(t *testing.T, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startNode starts bin bound to bind, with the local and cluster files
// given (%[1]s in the cluster file stands for bind), and waits until it
// serves: until its /status, asked through hc over HTTPS if hc is set,
// names the address its cluster file gives it.
func startNode(t *testing.T, bin, bind, local, cluster string, hc *http.Client) *process {
	t.Helper()
	dir := t.TempDir()
	host, port, _ := net.SplitHostPort(bind)
	p := &process{url: "http://" + bind, addr: bind, clusterPath: filepath.Join(dir, "chronos_cluster.conf"),
		localPath: filepath.Join(dir, "chronos.conf"), client: hc}
	if hc != nil {
		p.scheme = "https"
	}
	if _, rest, ok := strings.Cut(cluster, "localhost = "); ok {
		if self, _, _ := strings.Cut(rest, "\n"); self != "%[1]s" {
			p.self = self
		}
	}
	local = fmt.Sprintf("[http]\nbind-address = %s\nbind-port = %s\n", host, port) + local
	if err := os.WriteFile(p.localPath, []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	p.writeCluster(t, cluster)
	if err := p.start(t, bin, waitTimeout); err != nil {
		t.Fatal(err)
	}
	return p
}

// metric reads one series of a node's /metrics (see scrape), 0 when
// absent.
func metric(t *testing.T, c *http.Client, base, series string) float64 {
	t.Helper()
	return scrape(t, c, base)[series]
}

// awaitMetric polls a node's /metrics until series satisfies ok, at most
// waitTimeout: the condition is the node's state, which no event tells.
func awaitMetric(t *testing.T, c *http.Client, base, series string, ok func(float64) bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		v := metric(t, c, base, series)
		if ok(v) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s = %v after %v", base, series, v, waitTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// captured is a request a recording proxy forwarded.
type captured struct {
	method, target string
	header         http.Header
	body           []byte
}

// tap is a reverse proxy to a node that keeps every request it
// forwards: a capture of the traffic between two nodes.
type tap struct {
	mu   sync.Mutex
	reqs []captured
}

func startTap(t *testing.T, addr, target string) *tap {
	t.Helper()
	r := &tap{}
	u, _ := url.Parse("http://" + target)
	proxy := httputil.NewSingleHostReverseProxy(u)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, captured{req.Method, req.URL.RequestURI(), req.Header.Clone(), body})
		r.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, req)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return r
}

func (r *tap) take() []captured {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]captured(nil), r.reqs...)
}

// replay sends c again to base and returns the status and Reason.
func replay(t *testing.T, hc *http.Client, base string, c captured) (int, string) {
	t.Helper()
	req, err := http.NewRequest(c.method, base+c.target, bytes.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = c.header.Clone()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Reason")
}

// TestReplayedInternalRequestsAreRefused is finding 3: a signed
// replication PUT and resync GET, captured by a proxy between two nodes,
// replayed once the deleted timer's tombstone has expired. Before, the
// PUT was answered 200 and the deleted timer popped again, and the GET
// listed timers created after the capture; now both are refused as late
// or replayed, the node still holds nothing, and a capture replayed to
// the other node is refused as addressed elsewhere.
func TestReplayedInternalRequestsAreRefused(t *testing.T) {
	t.Parallel() // waits on real timers, not on the CPU (Makefile: -parallel)
	bin := proctest.Chronos(t)
	a, b, proxy := freeOn(t, "127.0.0.2"), freeOn(t, "127.0.0.3"), freeOn(t, "127.0.0.4")
	// B serves on b, but the cluster knows it as proxy, whose tap
	// forwards to it: every request A sends B passes the tap.
	tp := startTap(t, proxy, b)
	cluster := func(self string) string {
		return "[cluster]\nlocalhost = " + self + "\nnode = " + a + "\nnode = " + proxy + "\nkey = " + testKey + "\n"
	}
	pb := startNode(t, bin, b, "", cluster(proxy), nil)
	pa := startNode(t, bin, a, "", cluster(a), nil)
	hc := &http.Client{}
	cb := newCallbacks(t)

	// One pop, 5 s on, so that the tombstone's life is its least, not a
	// long definition's (docs/design.md 4.15).
	status, loc := do(t, hc, "POST", pa.url+"/timers",
		`{"timing":{"interval":5,"repeat-for":5},"callback":{"http":{"uri":"`+cb.url+`","opaque":"zombie"}},"reliability":{"replication-factor":2}}`)
	if status != http.StatusOK {
		t.Fatalf("create: %d", status)
	}
	awaitMetric(t, hc, pb.url, "chronos_timers", func(v float64) bool { return v == 1 })
	if status, _ := do(t, hc, "DELETE", pa.url+loc, ""); status != http.StatusOK {
		t.Fatalf("delete: %d", status)
	}
	awaitMetric(t, hc, pb.url, "chronos_tombstones", func(v float64) bool { return v == 1 })
	awaitMetric(t, hc, pb.url, "chronos_tombstones", func(v float64) bool { return v == 0 })

	var puts, gets int
	for _, c := range tp.take() {
		switch {
		case c.method == "PUT" && strings.HasPrefix(c.target, "/timers/"):
			puts++
		case c.method == "GET" && strings.HasPrefix(c.target, "/timers?"):
			gets++
		default:
			continue // a batch, or a notice: the lone ones make the case
		}
		if status, reason := replay(t, hc, pb.url, c); status != http.StatusForbidden || !strings.Contains(reason, "replayed") {
			t.Errorf("%s %s replayed after the tombstone expired: %d %q, want 403 as late or replayed", c.method, c.target, status, reason)
		}
		if v := metric(t, hc, pb.url, "chronos_timers"); v != 0 {
			t.Errorf("after %s %s was replayed B holds %v live timers, want 0", c.method, c.target, v)
		}
		if status, reason := replay(t, hc, pa.url, c); status != http.StatusForbidden || !strings.Contains(reason, "addressed to") {
			t.Errorf("%s %s replayed to the other node: %d %q, want 403 as addressed elsewhere", c.method, c.target, status, reason)
		}
	}
	if puts == 0 || gets == 0 {
		t.Fatalf("captured %d lone replication PUTs and %d resync GETs, want some of each", puts, gets)
	}
	if v := metric(t, hc, pb.url, `chronos_internal_refused_total{reason="age"}`); v < float64(puts+gets) {
		t.Errorf(`B's chronos_internal_refused_total{reason="age"} = %v, want at least %d`, v, puts+gets)
	}
	select {
	case p := <-cb.pops:
		t.Errorf("the deleted timer popped: %+v", p)
	default:
	}
}

// TestAllowListHoldsOnEveryPath is finding 2 and 5: a replica refuses a
// timer its allow-list forbids even when a peer holding the key
// replicates it, an unsigned replication PUT is refused by a keyed node
// and by a lone node without a key, and by default a callback to a
// link-local address or to the node's own API is refused.
func TestAllowListHoldsOnEveryPath(t *testing.T) {
	bin := proctest.Chronos(t)
	a, b, lone := freeOn(t, "127.0.0.2"), freeOn(t, "127.0.0.3"), freeOn(t, "127.0.0.6")
	cluster := func(self string) string {
		return "[cluster]\nlocalhost = " + self + "\nnode = " + a + "\nnode = " + b + "\nkey = " + testKey + "\n"
	}
	pb := startNode(t, bin, b, "[callbacks]\nallowed_host = 127.0.0.1\n", cluster(b), nil)
	pa := startNode(t, bin, a, "", cluster(a), nil)
	pl := startNode(t, bin, lone, "", "[cluster]\nlocalhost = %[1]s\nnode = %[1]s\n", nil)
	hc := &http.Client{}

	forbidden := "http://127.0.0.7:9/cb"
	body := `{"timing":{"interval":600},"callback":{"http":{"uri":"` + forbidden + `"}},"reliability":{"replication-factor":2}}`
	status, loc := do(t, hc, "POST", pa.url+"/timers", body)
	if status != http.StatusOK {
		t.Fatalf("create through the node that allows it: %d", status)
	}
	if v := metric(t, hc, pb.url, "chronos_callbacks_refused_total"); v != 1 {
		t.Errorf("B refused %v replicated timers for their callback, want 1", v)
	}
	if v := metric(t, hc, pb.url, "chronos_timers"); v != 0 {
		t.Errorf("B holds %v timers, want none: its allow-list forbids the callback", v)
	}

	repl := `{"timing":{"interval":1,"start-time-delta":0,"sequence-number":0,"version":"1"},"callback":{"http":{"uri":"` + forbidden +
		`"}},"reliability":{"cluster-view-id":"0","replicas":["` + lone + `"]}}`
	for _, base := range []string{pa.url, pl.url} {
		status, _, reason, err := request(hc, "PUT", base+loc, repl)
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusForbidden {
			t.Errorf("unsigned replication PUT to %s: %d %q, want 403", base, status, reason)
		}
	}
	for uri, want := range map[string]string{
		"http://169.254.169.254/latest/meta-data":                                 "link-local",
		"http://" + lone + "/timers":                                              "own address",
		"http://[fe80::1]:80/":                                                    "link-local",
		"http://0.0.0.0:" + lone[strings.LastIndexByte(lone, ':')+1:] + "/timers": "unspecified",
	} {
		status, _, reason, err := request(hc, "POST", pl.url+"/timers", timerBody(1, 0, uri, "x"))
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusBadRequest || !strings.Contains(reason, want) {
			t.Errorf("callback %s: %d %q, want 400 naming %s", uri, status, reason, want)
		}
	}
}

// rss is the resident set of process pid in bytes (Linux).
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc/%d/status to read the RSS from (%v): the byte-budget test measures memory through Linux's /proc, run it on Linux, where every process has /proc/<pid>/status, to lift this skip", pid, err)
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// TestByteBudgetSheds is finding 4: 150 timers of about 1 MiB of opaque
// data each, to a node with a 64 MiB memory limit. Before, the node went
// from 20 MB to 250 MB with no 503; now it takes what its byte budget
// (7/8 of the limit) holds, answers the rest 503 with Retry-After,
// counts them, stays up, and its RSS stays bounded.
func TestByteBudgetSheds(t *testing.T) {
	bin := proctest.Chronos(t)
	p := startNode(t, bin, freeOn(t, "127.0.0.2"), "[limits]\nmemory_limit = 64MiB\n", "[cluster]\nlocalhost = %[1]s\nnode = %[1]s\n", nil)
	hc := &http.Client{}
	opaque := strings.Repeat("x", wire.MaxBodyBytes-200)
	var ok, shed int
	for i := range 150 {
		req, _ := http.NewRequest("POST", p.url+"/timers", strings.NewReader(timerBody(3600, 0, "http://127.0.0.1:9/cb", opaque)))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("POST %d: %v", i, err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			ok++
		case http.StatusServiceUnavailable:
			shed++
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(resp.Header.Get("Reason"), "budget") {
				t.Errorf("503 with Retry-After %q and Reason %q, want both, naming the budget", resp.Header.Get("Retry-After"), resp.Header.Get("Reason"))
			}
		default:
			t.Fatalf("POST %d: %d %q", i, resp.StatusCode, resp.Header.Get("Reason"))
		}
	}
	if ok == 0 || shed == 0 || ok > 56 {
		t.Errorf("%d taken and %d refused, want some of each and at most 56 (56 MiB of budget)", ok, shed)
	}
	if status, _ := do(t, hc, "GET", p.url+"/ping", ""); status != http.StatusOK {
		t.Errorf("after the burst /ping answers %d, want 200", status)
	}
	if v := metric(t, hc, p.url, `chronos_shed_total{limit="bytes"}`); v != float64(shed) {
		t.Errorf(`chronos_shed_total{limit="bytes"} = %v, want %d`, v, shed)
	}
	const bound = 200 << 20
	r := rss(t, p.proc.Pid())
	t.Logf("%d timers taken, %d refused; RSS %d MiB", ok, shed, r>>20)
	if r > bound {
		t.Errorf("RSS %d MiB, want at most %d MiB", r>>20, bound>>20)
	}
}

// signedPut builds an internal PUT of body to base (an https node whose
// cluster address is to), stamped now and signed with testKey, as a
// member would send it.
func signedPut(t *testing.T, base, to, target string, body []byte) *http.Request {
	t.Helper()
	sent := strconv.FormatInt(time.Now().UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(testKey))
	mac.Write([]byte("PUT\n" + target + "\n" + sent + "\n" + to + "\n"))
	mac.Write(body)
	req, err := http.NewRequest("PUT", base+target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(node.HeaderSent, sent)
	req.Header.Set(node.HeaderTo, to)
	req.Header.Set(node.HeaderSignature, hex.EncodeToString(mac.Sum(nil)))
	return req
}

// TestMutualTLSRefusesANodeWithoutACertificate is finding 7: two nodes
// with certificates a CA signed replicate to each other over mutual TLS;
// a client creates over HTTPS with no certificate; a sender that holds
// the cluster key but no certificate (a node without one) is refused with
// 403, and one whose certificate another CA signed cannot even connect.
func TestMutualTLSRefusesANodeWithoutACertificate(t *testing.T) {
	bin := proctest.Chronos(t)
	ca, other := certtest.NewCA(t, "cluster"), certtest.NewCA(t, "other")
	a, b := freeOn(t, "127.0.0.2"), freeOn(t, "127.0.0.3")
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(ca.File)
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	nodes := map[string]*process{}
	for _, addr := range []string{b, a} {
		cert, key := ca.Issue(t, "node-"+strings.ReplaceAll(addr, ":", "-"), addr[:strings.LastIndexByte(addr, ':')])
		nodes[addr] = startNode(t, bin, addr, "[http]\ntls_cert_file = "+cert+"\ntls_key_file = "+key+"\n",
			"[cluster]\nlocalhost = "+addr+"\nnode = "+a+"\nnode = "+b+"\nkey = "+testKey+"\ntls_ca_file = "+ca.File+"\n", hc)
	}
	ua, ub := "https://"+a, "https://"+b

	body := `{"timing":{"interval":600},"callback":{"http":{"uri":"http://127.0.0.1:9/cb"}},"reliability":{"replication-factor":2}}`
	status, loc := do(t, hc, "POST", ua+"/timers", body)
	if status != http.StatusOK {
		t.Fatalf("create over HTTPS: %d", status)
	}
	awaitMetric(t, hc, ub, "chronos_timers", func(v float64) bool { return v == 1 })

	repl := []byte(`{"timing":{"interval":1,"version":"1"},"callback":{},"reliability":{"cluster-view-id":"0","replicas":["` + b + `"]}}`)
	resp, err := hc.Do(signedPut(t, ub, b, loc, repl))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("Reason"), "mutual TLS") {
		t.Errorf("signed PUT without a client certificate: %d %q, want 403 naming mutual TLS", resp.StatusCode, resp.Header.Get("Reason"))
	}
	if v := metric(t, hc, ub, `chronos_internal_refused_total{reason="certificate"}`); v != 1 {
		t.Errorf(`chronos_internal_refused_total{reason="certificate"} = %v, want 1`, v)
	}
	if v := metric(t, hc, ub, "chronos_timers"); v != 1 {
		t.Errorf("B holds %v live timers after the refused tombstone, want 1", v)
	}

	cert, key := other.Issue(t, "stranger", "127.0.0.1")
	stranger, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	// Offered whatever CAs the node names as acceptable.
	offer := func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &stranger, nil }
	sc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, GetClientCertificate: offer}}}
	if resp, err := sc.Do(signedPut(t, ub, b, loc, repl)); err == nil {
		resp.Body.Close()
		t.Errorf("a certificate another CA signed: answered %d, want the handshake refused", resp.StatusCode)
	}
}
