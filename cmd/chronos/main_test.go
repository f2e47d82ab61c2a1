//go:build unix

// The end-to-end test drives the process with Unix signals (SIGHUP,
// SIGUSR1, SIGTERM), so it exists only where they do.

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/localcluster"
	"github.com/chronos-timer/chronos/internal/proctest"
	"github.com/chronos-timer/chronos/wire"
)

// waitTimeout bounds every wait on the process or on a pop. Generous: it is
// a ceiling against hangs, never a measured timing.
const waitTimeout = 20 * time.Second

// isTimerPath reports whether loc is /timers/<a wire ID the node issues>.
func isTimerPath(loc string) bool {
	wid, ok := strings.CutPrefix(loc, "/timers/")
	_, _, err := wire.ParseWireID(wid)
	return ok && err == nil
}

// TestProcessLoopback proves the production binary end to end on loopback:
// it starts from configuration files, pops a created timer with its opaque
// data and X-Sequence-Number 1, pops the new definition after a PUT, pops
// nothing of a timer after its DELETE, and exits 0 on SIGTERM.
func TestProcessLoopback(t *testing.T) {
	bin := proctest.Chronos(t)
	cb := newCallbacks(t)
	p := startProcess(t, bin)
	client := &http.Client{Timeout: waitTimeout}

	if status, _ := do(t, client, http.MethodGet, p.url+"/ping", ""); status != http.StatusOK {
		t.Fatalf("GET /ping: status %d, want 200", status)
	}
	if status, _ := do(t, client, http.MethodPost, p.url+"/timers", `{"timing":{}}`); status != http.StatusBadRequest {
		t.Fatalf("POST of a timer without interval: status %d, want 400", status)
	}
	// Create: one pop per second for 30 s.
	status, loc := do(t, client, http.MethodPost, p.url+"/timers", timerBody(1, 30, cb.url, "hello"))
	if status != http.StatusOK || !isTimerPath(loc) {
		t.Fatalf("POST /timers: status %d Location %q, want 200 and /timers/<32 hex digits>", status, loc)
	}
	cb.expect(t, pop{"hello", "1"})

	// Update right after a pop, so the next pop of the old definition is a
	// second away: every pop from here on must carry the new definition.
	status, newLoc := do(t, client, http.MethodPut, p.url+loc, timerBody(1, 30, cb.url, "updated"))
	if status != http.StatusOK || !isTimerPath(newLoc) {
		t.Fatalf("PUT %s: status %d Location %q, want 200 and a timer path", loc, status, newLoc)
	}
	cb.expect(t, pop{"updated", "1"})
	cb.expect(t, pop{"updated", "2"})

	// Delete right after a pop, then create a sentinel due after the
	// deleted timer's next pop would have been: when the sentinel pops,
	// that pop would already have arrived, so no sleep is needed.
	if status, _ := do(t, client, http.MethodDelete, p.url+newLoc, ""); status != http.StatusOK {
		t.Fatalf("DELETE %s: status %d, want 200", newLoc, status)
	}
	if status, _ := do(t, client, http.MethodPost, p.url+"/timers", timerBody(2, 0, cb.url, "sentinel")); status != http.StatusOK {
		t.Fatalf("POST sentinel: status %d, want 200", status)
	}
	cb.expect(t, pop{"sentinel", "1"})

	// SIGHUP re-reads the cluster file; SIGUSR1 asks for a resync.
	p.writeCluster(t, "[cluster]\nlocalhost = %[1]s\nnode = %[1]s\njoining = 127.0.0.1:9\n")
	p.signal(t, syscall.SIGHUP)
	p.waitFor(t, `msg="cluster reloaded"`)
	p.signal(t, syscall.SIGUSR1)
	p.waitFor(t, `msg="resync requested"`)

	p.signal(t, syscall.SIGTERM)
	select {
	case <-p.proc.Done():
		if err := p.proc.Err(); err != nil {
			t.Errorf("exit after SIGTERM: %v, want status 0\n%s", err, p.proc.Log())
		}
	case <-time.After(waitTimeout):
		t.Fatalf("process still running %v after SIGTERM", waitTimeout)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	proctest.Cleanup()
	os.Exit(code)
}

// timerBody is a client timer definition; repeatFor 0 means a one-shot.
func timerBody(interval, repeatFor int, uri, opaque string) string {
	return string(wire.Encode(wire.Timer{Interval: time.Duration(interval) * time.Second, RepeatFor: time.Duration(repeatFor) * time.Second, URI: uri, Opaque: opaque}))
}

// do sends one request and returns the status and Location.
func do(t *testing.T, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	status, loc, reason, err := request(c, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK {
		t.Logf("%s %s: %d Reason %q", method, url, status, reason)
	}
	return status, loc
}

// request sends one request and returns the status, Location and Reason.
// Unlike do it never fails the test, so any goroutine may call it.
func request(c *http.Client, method, url, body string) (status int, loc, reason string, err error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", "", fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("Reason"), nil
}

// pop is one callback as the client sees it.
type pop struct {
	body string
	seq  string
}

// callbacks is the client's callback endpoint on loopback.
type callbacks struct {
	url  string
	pops chan pop
}

func newCallbacks(t *testing.T) *callbacks {
	t.Helper()
	c := &callbacks{pops: make(chan pop, 64)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.pops <- pop{string(body), r.Header.Get("X-Sequence-Number")}
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL + "/cb"
	return c
}

// expect fails unless the next pop to arrive is want.
func (c *callbacks) expect(t *testing.T, want pop) {
	t.Helper()
	select {
	case got := <-c.pops:
		if got != want {
			t.Fatalf("pop = %+v, want %+v", got, want)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("no pop within %v, want %+v", waitTimeout, want)
	}
}

// process is a chronos node of a test: its files, and its process once
// started.
type process struct {
	url         string
	addr        string
	localPath   string
	clusterPath string
	// files are more file flags, after the two above: the shared file
	// and dns.json of an example.
	files []string
	// scheme and client ask a node that serves TLS for its /status;
	// empty and nil for plain HTTP.
	scheme string
	client *http.Client
	// self is the address the node knows itself by, when its cluster
	// file gives one other than addr.
	self string
	proc *localcluster.Proc
}

// writeCluster rewrites the cluster file; %[1]s stands for the node's
// address.
func (p *process) writeCluster(t *testing.T, content string) {
	t.Helper()
	if err := os.WriteFile(p.clusterPath, []byte(strings.ReplaceAll(content, "%[1]s", p.addr)), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (p *process) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.proc.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// waitFor fails unless marker shows up in the process's log in time.
func (p *process) waitFor(t *testing.T, marker string) {
	t.Helper()
	if err := p.proc.AwaitLog(marker, waitTimeout); err != nil {
		t.Fatalf("%v:\n%s", err, p.proc.Log())
	}
}

// startProcess starts bin on a free loopback port, as a lone node with
// instance_id 1, and waits until it serves.
func startProcess(t *testing.T, bin string) *process {
	t.Helper()
	return startWith(t, bin, func(host, port string) (string, string) {
		return fmt.Sprintf("[http]\nbind-address = %s\nbind-port = %s\n\n[logging]\nlevel = 3\n\n[identity]\ninstance_id = 1\n", host, port),
			"[cluster]\nlocalhost = %[1]s\nnode = %[1]s\n"
	})
}

// startWith starts bin on a free loopback port with the configuration
// files conf gives for that port (in the cluster file, %[1]s stands for the
// node's address) and waits until it serves, on another port if another
// process takes the first.
func startWith(t *testing.T, bin string, conf func(host, port string) (local, cluster string)) *process {
	t.Helper()
	return startMembers(t, 1, func(addrs []string, _ int) (*process, error) {
		return tryStart(t, bin, addrs[0], conf)
	})[0]
}

// startMembers starts n nodes on free loopback ports, node i of the
// addresses by start, and waits until all serve. If another process takes
// a port between the probe and the bind, it starts them all again on
// other ports: no other node knows their addresses yet.
func startMembers(t *testing.T, n int, start func(addrs []string, i int) (*process, error)) []*process {
	t.Helper()
	var members []*process
	err := localcluster.OnFreeAddrs(n, func(addrs []string) error {
		members = nil
		for i := range addrs {
			p, err := start(addrs, i)
			if err != nil {
				for _, m := range members {
					m.proc.Kill()
				}
				return err
			}
			members = append(members, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return members
}

func tryStart(t *testing.T, bin, addr string, conf func(host, port string) (local, cluster string)) (*process, error) {
	dir := t.TempDir()
	host, port, _ := net.SplitHostPort(addr)
	p := &process{
		url: "http://" + addr, addr: addr, clusterPath: filepath.Join(dir, "chronos_cluster.conf"),
		localPath: filepath.Join(dir, "chronos.conf"),
	}
	local, cluster := conf(host, port)
	if err := os.WriteFile(p.localPath, []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	p.writeCluster(t, cluster)
	if err := p.start(t, bin, waitTimeout); err != nil {
		return nil, err
	}
	return p, nil
}

// start runs bin with the original's two file flags, p's files, and no
// other file but p.files, and waits up to wait until it serves. The
// process is killed when the test ends, and its log shown if the test
// failed.
func (p *process) start(t *testing.T, bin string, wait time.Duration) error {
	t.Helper()
	args := append(slices.Clone(noFiles), "--local-config-file", p.localPath, "--cluster-config-file", p.clusterPath)
	proc, err := proctest.Start(t, localcluster.Spec{Name: "chronos", Bin: bin, Args: append(args, p.files...),
		Addr: p.addr, Self: p.self, Scheme: p.scheme, Client: p.client}, wait)
	if err != nil {
		return err
	}
	p.proc = proc
	return nil
}
