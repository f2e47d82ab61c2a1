package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/certtest"
	"github.com/chronos-timer/chronos/server"
	"github.com/chronos-timer/chronos/server/config"
)

// wait bounds every wait on a pop or on the watch: a ceiling against
// hangs, never a measured timing.
const wait = 20 * time.Second

// startNode serves a lone node, the production server, on a loopback port
// until the test ends, and returns its address; configure, if given,
// changes its configuration first.
func startNode(t *testing.T, configure ...func(*config.Node)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	cfg.BindAddress = host
	if cfg.BindPort, err = strconv.Atoi(port); err != nil {
		t.Fatal(err)
	}
	for _, c := range configure {
		c(&cfg)
	}
	srv, err := server.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String()
}

// ctl runs chronosctl with args and returns its exit status and output.
func ctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// watcher runs chronosctl watch and hands on the lines it prints.
type watcher struct {
	uri   string
	lines chan string
	exit  chan int
}

func startWatch(t *testing.T, args ...string) *watcher {
	t.Helper()
	r, w := io.Pipe()
	wt := &watcher{lines: make(chan string, 16), exit: make(chan int, 1)}
	go func() {
		code := run(t.Context(), append([]string{"watch"}, args...), w, io.Discard)
		w.Close()
		wt.exit <- code
	}()
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			wt.lines <- sc.Text()
		}
		close(wt.lines)
	}()
	first := wt.next(t)
	uri, ok := strings.CutPrefix(first, "callback uri: ")
	if !ok {
		t.Fatalf("watch printed %q first, want its callback uri", first)
	}
	wt.uri = uri
	return wt
}

func (w *watcher) next(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-w.lines:
		if !ok {
			t.Fatal("watch ended its output")
		}
		return line
	case <-time.After(wait):
		t.Fatalf("watch printed nothing within %v", wait)
	}
	return ""
}

var popLine = regexp.MustCompile(`^\S+ pop timer=([0-9a-f]{16}) seq=(\d+) opaque="(.*)"$`)

// expectPop fails unless the next line watch prints is pop seq of timer
// id with the opaque data.
func (w *watcher) expectPop(t *testing.T, id string, seq int, opaque string) {
	t.Helper()
	line := w.next(t)
	m := popLine.FindStringSubmatch(line)
	if m == nil || m[1] != id[:16] || m[2] != strconv.Itoa(seq) || m[3] != opaque {
		t.Fatalf("watch printed %q, want pop %d of %s with opaque %q", line, seq, id, opaque)
	}
}

// TestCommandsAgainstNode proves the commands against a real node: watch
// serves a sink and prints the pops of a timer that create made and
// update changed, then exits 0 after -count pops; get prints a pending
// timer, and exits 4 once delete removed it; status prints the node's
// JSON indented; a definition the node refuses exits 3 with the node's
// reason.
func TestCommandsAgainstNode(t *testing.T) {
	addr := startNode(t)
	w := startWatch(t, "-count", "2")

	code, out, errOut := ctl(t, "-nodes", addr, "create", "-interval", "0", "-uri", w.uri, "-opaque", "hello", "-rf", "1", "-tags", "CALL:2,REG")
	if code != exitOK {
		t.Fatalf("create: exit %d, stderr %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	w.expectPop(t, id, 1, "hello")

	code, out, errOut = ctl(t, "-nodes", addr, "update", id, "-interval", "0s", "-uri", w.uri, "-opaque", "again")
	if code != exitOK || strings.TrimSpace(out)[:16] != id[:16] {
		t.Fatalf("update: exit %d, stdout %q, stderr %s; want 0 and the timer's ID", code, out, errOut)
	}
	w.expectPop(t, id, 1, "again")
	select {
	case code := <-w.exit:
		if code != exitOK {
			t.Errorf("watch -count 2: exit %d, want 0", code)
		}
	case <-time.After(wait):
		t.Fatalf("watch -count 2 still running after 2 pops")
	}

	// get reads a pending timer as live; after its delete, as no timer.
	code, out, errOut = ctl(t, "-nodes", addr, "create", "-interval", "1h", "-uri", w.uri, "-opaque", "later")
	if code != exitOK {
		t.Fatalf("create: exit %d, stderr %s", code, errOut)
	}
	later := strings.TrimSpace(out)
	code, out, errOut = ctl(t, "-nodes", addr, "get", later)
	if code != exitOK || !strings.Contains(out, `"opaque": "later"`) || !strings.Contains(out, `"state": "live"`) {
		t.Errorf("get: exit %d, stdout %s, stderr %s; want the live timer", code, out, errOut)
	}
	if code, _, errOut := ctl(t, "-nodes", addr, "delete", later); code != exitOK {
		t.Errorf("delete: exit %d, stderr %s", code, errOut)
	}
	if code, _, errOut := ctl(t, "-nodes", addr, "get", later); code != exitNotFound || !strings.Contains(errOut, "404 Not Found: no such timer") {
		t.Errorf("get after delete: exit %d, stderr %q; want 4, no such timer", code, errOut)
	}

	code, out, errOut = ctl(t, "-nodes", addr, "status")
	var st struct {
		Address string `json:"address"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil || st.Address != addr || !strings.Contains(out, "\n  \"address\": ") {
		t.Errorf("status: exit %d, stdout %q, stderr %s; want the node's status, indented", code, out, errOut)
	}

	code, _, errOut = ctl(t, "-nodes", addr, "create", "-interval", "5", "-uri", "ftp://127.0.0.1/x")
	if code != exitRefused || !strings.Contains(errOut, `400 Bad Request: callback.http.uri "ftp://127.0.0.1/x" is not an absolute http or https URL`) {
		t.Errorf("create with an ftp uri: exit %d, stderr %q; want 3 and the node's reason", code, errOut)
	}
}

// TestGetPrintsReplicas proves that get prints the node's answer as
// indented JSON, and exits 4 when no replica holds the timer.
func TestGetPrintsReplicas(t *testing.T) {
	const id = "8123456789abcdef0000000000000f0f"
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/timers/"+id {
			w.Header().Set("Reason", "no replica holds the timer live")
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, `{"id":"`+id+`","timer":{"timing":{"interval":2},"callback":{"http":{"uri":"http://127.0.0.1:9/cb","opaque":"x"}}},`+
			`"sequence-number":1,"next-pop":"2026-03-01T12:00:00Z","replicas":[{"node":"127.0.0.1:7253","state":"live","sequence-number":1}]}`)
	}))
	defer node.Close()

	code, out, errOut := ctl(t, "-nodes", node.URL, "get", id)
	for _, want := range []string{`"id": "` + id + `"`, `"interval": 2`, `"next-pop": "2026-03-01T12:00:00Z"`, `"state": "live"`} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("get: exit %d, stdout %s, stderr %s; want 0 and %s", code, out, errOut, want)
		}
	}
	code, _, errOut = ctl(t, "-nodes", node.URL, "get", "8123456789abcdef0000000000000000")
	if code != exitNotFound || !strings.Contains(errOut, "no replica holds the timer live") {
		t.Errorf("get of a timer nobody holds: exit %d, stderr %q; want 4 and the reason", code, errOut)
	}
}

// TestExitStatus proves the exit status and message of each kind of
// failure: bad usage is 2 with a message and nothing sent; a cluster
// that does not answer is 1.
func TestExitStatus(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	const id = "8123456789abcdef0000000000000000"
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "no command"},
		{[]string{"-h"}, exitOK, "usage: chronosctl"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"-nodes", "ftp://x", "status"}, exitUsage, "the scheme is not http or https"},
		{[]string{"-nodes", "", "status"}, exitUsage, "no node addresses"},
		{[]string{"create", "-uri", "http://127.0.0.1:9/cb"}, exitUsage, "-interval is required"},
		{[]string{"create", "-interval", "1.5", "-uri", "http://127.0.0.1:9/cb"}, exitUsage, "neither seconds nor a duration"},
		{[]string{"create", "-interval", "1500ms", "-uri", "http://127.0.0.1:9/cb"}, exitUsage, "interval 1.5s is not a whole number of seconds"},
		{[]string{"create", "-interval", "1"}, exitUsage, "callback URI is empty"},
		{[]string{"create", "-interval", "1", "-uri", "http://127.0.0.1:9/cb", "-tags", "A:0"}, exitUsage, `count "0" of tag "A"`},
		{[]string{"create", "-interval", "1", "-uri", "http://127.0.0.1:9/cb", "extra"}, exitUsage, "create takes no arguments"},
		{[]string{"update", "-interval", "1", "-uri", "http://127.0.0.1:9/cb"}, exitUsage, "update takes the timer's ID"},
		{[]string{"delete", "nothex"}, exitUsage, `timer ID "nothex" is not 32 hex digits`},
		{[]string{"delete", id, id}, exitUsage, "delete takes the timer's ID"},
		{[]string{"status", "a", "b"}, exitUsage, "at most one node address"},
		{[]string{"watch", "-count", "-1"}, exitUsage, "-count -1 is negative"},
		{[]string{"-nodes", dead, "delete", id}, exitFailed, "all nodes failed after 3 attempts"},
		{[]string{"-nodes", dead, "-timeout", "1ms", "status"}, exitFailed, "context deadline exceeded"},
	}
	for _, tt := range tests {
		code, _, errOut := ctl(t, tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.want) {
			t.Errorf("chronosctl %q: exit %d, stderr %q; want %d with %q", tt.args, code, errOut, tt.code, tt.want)
		}
	}
}

// TestCommandsOverTLS proves chronosctl reaches a node that serves HTTPS
// with a certificate a test CA signed, given -tls-ca-file (the address
// then needs no scheme), and fails without it: the node's certificate is
// not one the system trusts.
func TestCommandsOverTLS(t *testing.T) {
	ca := certtest.NewCA(t, "ctl")
	cert, key := ca.Issue(t, "node", "127.0.0.1")
	addr := startNode(t, func(c *config.Node) { c.TLSCertFile, c.TLSKeyFile = cert, key })

	code, out, errOut := ctl(t, "-nodes", addr, "-tls-ca-file", ca.File, "create", "-interval", "1h", "-uri", "http://127.0.0.1:9/cb")
	if code != exitOK || strings.TrimSpace(out) == "" {
		t.Fatalf("create over TLS: exit %d, stdout %q, stderr %s; want 0 and an ID", code, out, errOut)
	}
	if code, _, _ := ctl(t, "-nodes", "https://"+addr, "-timeout", "3s", "status"); code == exitOK {
		t.Errorf("status over TLS without the CA: exit 0, want a failure (certificate not trusted)")
	}
	if code, _, _ := ctl(t, "-nodes", addr, "-tls-ca-file", "/nonexistent/ca.pem", "status"); code != exitUsage {
		t.Errorf("a CA file that does not exist: exit %d, want %d", code, exitUsage)
	}
}
