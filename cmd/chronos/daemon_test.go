//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/proctest"
	"github.com/chronos-timer/chronos/server/config"
	"github.com/chronos-timer/chronos/server/lifecycle"
)

// pollEvery is how often a test looks again at what it waits for, until
// waitTimeout: a bounded poll, never a sleep standing in for a wait.
const pollEvery = 10 * time.Millisecond

// daemonFiles writes the original's three INI files and a dns.json for a
// lone node on addr, logging into logDir, and returns the command line
// that names them.
func daemonFiles(t *testing.T, dir, addr, logDir string) []string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	files := []struct{ flag, name, content string }{
		// [http] and [logging] in the local file, as the original ships them.
		{"--local-config-file", "chronos.conf", fmt.Sprintf("[http]\nbind-address = %s\nbind-port = %s\nthreads = 50\n\n[logging]\nfolder = %s\nlevel = 3\n", host, port, logDir)},
		{"--cluster-config-file", "chronos_cluster.conf", fmt.Sprintf("[cluster]\nlocalhost = %[1]s\nnode = %[1]s\n", addr)},
		// [identity] in the shared file: any section may sit in any file.
		{"--shared-config-file", "chronos_shared.conf", "[sites]\nlocal_site = site1\nreplicate_timers_across_sites = false\n\n[exceptions]\nmax_ttl = 600\n\n[identity]\ninstance_id = 1\n\n[storage]\ndir = " + filepath.Join(dir, "data") + "\n"},
		{"--dns-config-file", "dns.json", `{"hostnames": [{"name": "callbacks.invalid", "records": [{"rrtype": "A", "targets": ["127.0.0.1"]}]}]}`},
	}
	var args []string
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, []byte(f.content), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, f.flag, path)
	}
	return args
}

// runParent runs the --daemon parent to its exit, within waitTimeout, and
// returns its process ID, output and error.
func runParent(t *testing.T, bin string, args ...string) (int, string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return cmd.Process.Pid, out.String(), err
	case <-time.After(waitTimeout):
		_ = cmd.Process.Kill()
		t.Fatalf("--daemon parent still running after %v:\n%s", waitTimeout, out.String())
		return 0, "", nil
	}
}

// poll waits, at most waitTimeout, for cond to hold, looking again every
// pollEvery; it fails the test with what otherwise.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("%s: not within %v", what, waitTimeout)
		}
	}
}

// alive reports whether a process with this ID exists.
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestProcessDaemon proves the original's command line on loopback:
// --daemon --pidfile with the local, cluster, shared and DNS files
// returns 0 with the node serving in the background; the pid file names a
// live process, not the parent, that answers GET /ping; the log file is in
// the [logging] folder; and SIGTERM to that process stops it cleanly and
// removes the pid file.
func TestProcessDaemon(t *testing.T) {
	bin := proctest.Chronos(t)
	dir := t.TempDir()
	logDir := filepath.Join(dir, "log")
	pidPath := filepath.Join(dir, "chronos.pid")
	addr := proctest.FreeAddr(t)
	args := append([]string{"--daemon", "--pidfile=" + pidPath}, daemonFiles(t, dir, addr, logDir)...)
	logPath := filepath.Join(logDir, config.LogFileName)

	parent, out, err := runParent(t, bin, args...)
	if err != nil {
		t.Fatalf("--daemon parent: %v, want exit 0\n%s", err, out)
	}
	data, err := os.ReadFile(pidPath)
	if err != nil {
		t.Fatalf("pid file after the parent returned: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 || pid == parent {
		t.Fatalf("pid file holds %q, want the ID of a process other than the parent (%d)", data, parent)
	}
	t.Cleanup(func() {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			errLog, _ := os.ReadFile(filepath.Join(logDir, lifecycle.ErrLogFileName))
			t.Logf("parent output:\n%s\nchronos log:\n%s\nchronos_err.log:\n%s", out, log, errLog)
		}
	})
	if !alive(pid) {
		t.Fatalf("pid file names %d, which is not running", pid)
	}
	client := &http.Client{Timeout: waitTimeout}
	if status, _ := do(t, client, http.MethodGet, "http://"+addr+"/ping", ""); status != http.StatusOK {
		t.Fatalf("GET /ping: status %d, want 200", status)
	}
	logHas := func(marker string) func() bool {
		return func() bool {
			b, _ := os.ReadFile(logPath)
			return bytes.Contains(b, []byte(marker))
		}
	}
	poll(t, "log file shows the node serving", logHas("msg=serving"))
	if _, err := os.Stat(filepath.Join(logDir, lifecycle.ErrLogFileName)); err != nil {
		t.Errorf("the daemon's stderr file: %v, want it in the log folder", err)
	}
	for _, want := range []string{`instance=1 instance_derived=false`, `replicate_across_sites=false`, `"static DNS names"=1`} {
		if !logHas(want)() {
			t.Errorf("log file lacks %s", want)
		}
	}

	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	poll(t, "pid file removed after SIGTERM", func() bool {
		_, err := os.Stat(pidPath)
		return errors.Is(err, os.ErrNotExist)
	})
	poll(t, "process gone after SIGTERM", func() bool { return !alive(pid) })
	if !logHas("msg=stopped")() {
		t.Errorf("log file lacks msg=stopped")
	}
}

// TestProcessDaemonFails proves that a --daemon parent whose child cannot
// start (its port is taken) exits non-zero with the child's error, and
// that no pid file is left.
func TestProcessDaemonFails(t *testing.T) {
	bin := proctest.Chronos(t)
	dir := t.TempDir()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	pidPath := filepath.Join(dir, "chronos.pid")
	args := append([]string{"--daemon", "--pidfile", pidPath}, daemonFiles(t, dir, taken.Addr().String(), filepath.Join(dir, "log"))...)

	_, out, err := runParent(t, bin, args...)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("--daemon parent: %v, want a non-zero exit\n%s", err, out)
	}
	if !strings.Contains(out, "failed to start") || !strings.Contains(out, "address already in use") {
		t.Errorf("parent output %q, want the child's error", out)
	}
	if _, err := os.Stat(pidPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file: %v, want none", err)
	}
}
