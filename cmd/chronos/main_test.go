package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// waitTimeout bounds every wait on the process or on a pop. Generous: it is
// a ceiling against hangs, never a measured timing.
const waitTimeout = 20 * time.Second

var timerPath = regexp.MustCompile(`^/timers/[0-9a-f]{32}$`)

// TestProcessLoopback proves the production binary end to end on loopback:
// it starts from configuration files, pops a created timer with its opaque
// data and X-Sequence-Number 1, pops the new definition after a PUT, pops
// nothing of a timer after its DELETE, and exits 0 on SIGTERM.
func TestProcessLoopback(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH, so cmd/chronos cannot be built; install Go to run this test")
	}
	bin := filepath.Join(t.TempDir(), "chronos")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cb := newCallbacks(t)
	p := startProcess(t, bin)
	client := &http.Client{Timeout: waitTimeout}

	if status, _ := do(t, client, http.MethodGet, p.url+"/ping", ""); status != http.StatusOK {
		t.Fatalf("GET /ping: status %d, want 200", status)
	}
	// Create: one pop per second for 30 s.
	status, loc := do(t, client, http.MethodPost, p.url+"/timers", timerBody(1, 30, cb.url, "hello"))
	if status != http.StatusOK || !timerPath.MatchString(loc) {
		t.Fatalf("POST /timers: status %d Location %q, want 200 and /timers/<32 hex digits>", status, loc)
	}
	cb.expect(t, pop{"hello", "1"})

	// Update right after a pop, so the next pop of the old definition is a
	// second away: every pop from here on must carry the new definition.
	status, newLoc := do(t, client, http.MethodPut, p.url+loc, timerBody(1, 30, cb.url, "updated"))
	if status != http.StatusOK || !timerPath.MatchString(newLoc) {
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

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v, want status 0\n%s", err, p.log.String())
		}
	case <-time.After(waitTimeout):
		t.Fatalf("process still running %v after SIGTERM", waitTimeout)
	}
}

// timerBody is a client timer definition; repeatFor 0 means a one-shot.
func timerBody(interval, repeatFor int, uri, opaque string) string {
	timing := fmt.Sprintf(`"interval":%d`, interval)
	if repeatFor > 0 {
		timing += fmt.Sprintf(`,"repeat-for":%d`, repeatFor)
	}
	return fmt.Sprintf(`{"timing":{%s},"callback":{"http":{"uri":%q,"opaque":%q}}}`, timing, uri, opaque)
}

// do sends one request and returns the status and Location.
func do(t *testing.T, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Logf("%s %s: %d Reason %q", method, url, resp.StatusCode, resp.Header.Get("Reason"))
	}
	return resp.StatusCode, resp.Header.Get("Location")
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

// process is a running chronos binary.
type process struct {
	cmd    *exec.Cmd
	url    string
	log    *logWatch
	exited chan error
}

// startProcess starts bin on a free loopback port and waits until it
// serves. Another process may take the port between our probe and the
// bind; then it tries again on another.
func startProcess(t *testing.T, bin string) *process {
	t.Helper()
	for attempt := 0; attempt < 3; attempt++ {
		p, err := tryStart(t, bin)
		if err == nil {
			return p
		}
		if !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
	t.Fatal("no free port after 3 attempts")
	return nil
}

func tryStart(t *testing.T, bin string) (*process, error) {
	dir := t.TempDir()
	addr := freeAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	local := fmt.Sprintf("[http]\nbind-address = %s\nbind-port = %s\n\n[logging]\nlevel = 3\n\n[identity]\ninstance_id = 1\n", host, port)
	cluster := fmt.Sprintf("[cluster]\nlocalhost = %s\nnode = %s\n", addr, addr)
	localPath, clusterPath := filepath.Join(dir, "chronos.conf"), filepath.Join(dir, "chronos_cluster.conf")
	for path, content := range map[string]string{localPath: local, clusterPath: cluster} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := &process{url: "http://" + addr, log: newLogWatch("msg=serving"), exited: make(chan error, 1)}
	p.cmd = exec.Command(bin, "--local-config-file", localPath, "--cluster-config-file", clusterPath)
	p.cmd.Stderr = p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill() // no-op once it has exited
		if t.Failed() {
			t.Logf("chronos log:\n%s", p.log.String())
		}
	})
	select {
	case <-p.log.seen:
		return p, nil
	case err := <-p.exited:
		return nil, fmt.Errorf("chronos exited before serving: %v\n%s", err, p.log.String())
	case <-time.After(waitTimeout):
		return nil, errors.New("chronos did not start serving in time\n" + p.log.String())
	}
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// logWatch keeps the process's log and closes seen when a line containing
// marker is written.
type logWatch struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	seen   chan struct{}
	once   sync.Once
}

func newLogWatch(marker string) *logWatch {
	return &logWatch{marker: marker, seen: make(chan struct{})}
}

func (w *logWatch) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if bytes.Contains(w.buf.Bytes(), []byte(w.marker)) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(b), nil
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
