//go:build unix

package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/localcluster"
	"github.com/chronos-timer/chronos/internal/proctest"
	"github.com/chronos-timer/chronos/server/config"
)

// TestClusterCommand proves `make cluster` as the README tells it: the
// README's curl example is the command's own for its default ports
// (127.0.0.1:7253-7255, a sink on 127.0.0.1:9999). Run on free ports
// (-base-port, -sink), so that a `make cluster` left running cannot skip
// it, the command starts three nodes and a sink, prints that example for
// its ports, and the example's create, sent as it is, is answered 200 and
// pops at the sink, which prints it with its sequence number and timer
// header. Every node answers /ping and runs from files that load with no
// warning; SIGTERM stops them all and the command exits 0.
func TestClusterCommand(t *testing.T) {
	bin := proctest.Chronos(t)
	readmeURL, readmeBody := readmeCreate(t)
	def := localcluster.DefaultOptions()
	if want := "http://" + net.JoinHostPort(localcluster.Host, strconv.Itoa(def.BasePort)) + "/timers"; readmeURL != want {
		t.Fatalf("README's curl example POSTs to %s, want the first node's %s", readmeURL, want)
	}
	if want := localcluster.ExampleTimer(def.Sink); readmeBody != want {
		t.Fatalf("README's curl example sends %s, want the command's example %s", readmeBody, want)
	}
	base, sink := proctest.FreePorts(t, def.Nodes), proctest.FreeAddr(t)
	nodes := make([]string, def.Nodes)
	for i := range nodes {
		nodes[i] = net.JoinHostPort(localcluster.Host, strconv.Itoa(base+i))
	}
	url, body := "http://"+nodes[0]+"/timers", localcluster.ExampleTimer(sink)
	dir := t.TempDir()
	c := startClusterCommand(t, bin, "-dir", dir, "-base-port", strconv.Itoa(base), "-sink", sink)

	// The command prints the README's example itself, for its ports.
	printed := fmt.Sprintf("curl -i -X POST %s \\\n      -d '%s'", url, body)
	if !strings.Contains(c.output(), printed) {
		t.Errorf("the command does not print the README's example for its ports\n%s\nwant it to contain\n%s", c.output(), printed)
	}
	client := &http.Client{Timeout: clusterWait}
	for _, n := range nodes {
		if status, _ := do(t, client, http.MethodGet, "http://"+n+"/ping", ""); status != http.StatusOK {
			t.Fatalf("GET %s/ping: status %d, want 200", n, status)
		}
	}
	for i := range nodes {
		cfg := loadFiles(t, filepath.Join(dir, fmt.Sprintf("node%d", i+1), "chronos.conf"), filepath.Join(dir, localcluster.ClusterFileName), "", "")
		if cfg.Localhost != nodes[i] || strings.Join(cfg.Cluster.Nodes, ",") != strings.Join(nodes, ",") || cfg.ClusterKey == "" {
			t.Errorf("node%d's files: localhost %s, nodes %v, key set %v; want %s, %v, a key", i+1, cfg.Localhost, cfg.Cluster.Nodes, cfg.ClusterKey != "", nodes[i], nodes)
		}
	}

	status, loc := do(t, client, http.MethodPost, url, body)
	if status != http.StatusOK || !isTimerPath(loc) {
		t.Fatalf("POST %s with the example's body: status %d Location %q, want 200 and /timers/<32 hex digits>", url, status, loc)
	}
	timer := strings.TrimPrefix(loc, "/timers/")[:16]
	for seq := 1; seq <= 2; seq++ {
		c.waitFor(t, fmt.Sprintf(`sink  | POST /cb X-Sequence-Number: %d X-Chronos-Timer: %s body: "hello"`, seq, timer))
	}
	c.stop(t)
	c.waitFor(t, "stopped; configuration and logs kept in "+dir)
	for i := range nodes {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("node%d", i+1), config.LogFileName)); err != nil {
			t.Errorf("node%d's log: %v", i+1, err)
		}
	}
	for _, n := range nodes {
		ln, err := net.Listen("tcp", n)
		if err != nil {
			t.Fatalf("%s still taken after the command exited: %v", n, err)
		}
		ln.Close()
	}
}

// TestClusterCommandFlags proves -nodes and -base-port, and -sink= for no
// sink: one node serves on the chosen port, alone in its cluster, and
// stops with the command.
func TestClusterCommandFlags(t *testing.T) {
	bin := proctest.Chronos(t)
	addr := proctest.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	c := startClusterCommand(t, bin, "-nodes", "1", "-base-port", port, "-sink=", "-dir", t.TempDir())
	if strings.Contains(c.output(), "callback sink:") {
		t.Errorf("-sink= printed a sink:\n%s", c.output())
	}
	st, raw, err := getStatus(&http.Client{Timeout: clusterWait}, &process{url: "http://" + addr})
	if err != nil || st.Address != addr || len(st.Nodes) != 1 {
		t.Fatalf("GET /status of the one node: %v\n%s\nwant address %s alone", err, raw, addr)
	}
	c.stop(t)
	if ln, err := net.Listen("tcp", addr); err != nil {
		t.Errorf("%s still taken after the command exited: %v", addr, err)
	} else {
		ln.Close()
	}
}

// TestClusterCommandReload proves that SIGHUP to the command reloads
// every node, as SIGHUP to one node does (its membership and log level),
// and stops none: each logs the reload and still answers /ping, and
// SIGTERM then stops them and the command exits 0.
func TestClusterCommandReload(t *testing.T) {
	bin := proctest.Chronos(t)
	base := proctest.FreePorts(t, 2)
	c := startClusterCommand(t, bin, "-nodes", "2", "-base-port", strconv.Itoa(base), "-sink=", "-dir", t.TempDir())
	if err := c.proc.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "reload: 2 of 2 nodes re-read ")
	client := &http.Client{Timeout: clusterWait}
	for i := range 2 {
		addr := net.JoinHostPort(localcluster.Host, strconv.Itoa(base+i))
		c.waitFor(t, `msg="cluster reloaded" node=`+addr)
		if status, _ := do(t, client, http.MethodGet, "http://"+addr+"/ping", ""); status != http.StatusOK {
			t.Errorf("GET %s/ping after the reload: status %d, want 200", addr, status)
		}
	}
	c.stop(t)
}

// TestClusterCommandNodeExits proves that a node that dies under the
// command is reported with the command line that starts it again, and
// that the command exits 1 once no node is left.
func TestClusterCommandNodeExits(t *testing.T) {
	bin := proctest.Chronos(t)
	addr := proctest.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	c := startClusterCommand(t, bin, "-nodes", "1", "-base-port", port, "-sink=", "-dir", dir)
	pids := c.nodePIDs()
	if len(pids) != 1 {
		t.Fatalf("the command printed node pids %v, want one", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "node1 ("+addr+", pid "+strconv.Itoa(pids[0])+") exited: signal: killed; 0 of 1 nodes still serve. To start it again (in your terminal):\n    "+
		bin+" --local-config-file "+filepath.Join(dir, "node1", "chronos.conf")+" --cluster-config-file "+filepath.Join(dir, localcluster.ClusterFileName))
	select {
	case <-c.proc.Done():
		var exit *exec.ExitError
		if err := c.proc.Err(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("the command with no node left: %v, want exit status 1", err)
		}
		c.stopped = true
	case <-time.After(clusterWait):
		t.Fatalf("the command still runs %v after its only node died", clusterWait)
	}
	c.waitFor(t, "chronos cluster: localcluster: every node has exited")
}

// TestClusterCommandRefuses proves that bad flags exit 2 with the reason,
// before anything starts, and that a taken port is named.
func TestClusterCommandRefuses(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, port, _ := net.SplitHostPort(taken.Addr().String())
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-nodes", "0"}, 2, "nodes 0 is not in 1..16"},
		{[]string{"-nodes", "3", "-base-port", "65534"}, 2, "does not fit"},
		{[]string{"-sink", "example.com:80"}, 2, "not a loopback address"},
		{[]string{"extra"}, 2, "unexpected arguments"},
		{[]string{"-nodes", "1", "-base-port", port, "-sink=", "-dir", t.TempDir()}, 1, taken.Addr().String() + " is in use"},
	}
	for _, tt := range tests {
		var stdout, stderr strings.Builder
		if got := runCluster(tt.args, &stdout, &stderr); got != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("chronos cluster %q: exit %d, stderr %q; want %d and %q", tt.args, got, stderr.String(), tt.code, tt.want)
		}
	}
}

// readmeCreate returns the URL and body of the README's curl create.
func readmeCreate(t *testing.T) (url, body string) {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`curl -i -X POST (\S+) \\\n\s*-d '([^']+)'`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no `curl -i -X POST <url> \\ -d '<body>'` example")
	}
	return string(m[1]), string(m[2])
}

// clusterCommand is a running `chronos cluster`.
type clusterCommand struct {
	proc    *localcluster.Proc
	stopped bool // it exited 0 after SIGTERM: its nodes are gone
}

// startClusterCommand runs `bin cluster args...` and waits until it has
// printed its usage, which it does once every node serves. When the test
// ends the command is stopped, and its nodes killed if it did not stop
// them.
func startClusterCommand(t *testing.T, bin string, args ...string) *clusterCommand {
	t.Helper()
	c := &clusterCommand{proc: proctest.Launch(t, localcluster.Spec{Name: "chronos cluster", Bin: bin, Args: append([]string{"cluster"}, args...)})}
	t.Cleanup(func() { c.cleanup(t) }) // before proctest's kill: cleanups run last first
	if err := c.proc.AwaitLog("Stop every node:", clusterWait); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFor fails unless marker shows up in the command's output in time.
func (c *clusterCommand) waitFor(t *testing.T, marker string) {
	t.Helper()
	if err := c.proc.AwaitLog(marker, waitTimeout); err != nil {
		t.Fatalf("%v:\n%s", err, c.proc.Log())
	}
}

// output is what the command has printed.
func (c *clusterCommand) output() string { return c.proc.Log().String() }

// stop sends the command SIGTERM and fails unless it exits 0.
func (c *clusterCommand) stop(t *testing.T) {
	t.Helper()
	if err := c.proc.Stop(clusterWait); err != nil {
		t.Fatalf("chronos cluster after SIGTERM: %v, want exit 0", err)
	}
	c.stopped = true
}

// cleanup stops the command if the test did not, and if it will not
// stop, kills it and the nodes it printed the pids of.
func (c *clusterCommand) cleanup(t *testing.T) {
	if c.stopped || c.proc.Exited() {
		return
	}
	_ = c.proc.Signal(syscall.SIGTERM)
	select {
	case <-c.proc.Done():
		return
	case <-time.After(clusterWait):
	}
	c.proc.Kill()
	// Orphaned by the kill, so still running under the pids printed.
	for _, pid := range c.nodePIDs() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// nodePIDs are the node pids the command printed.
func (c *clusterCommand) nodePIDs() []int {
	var pids []int
	for _, m := range regexp.MustCompile(`(?m)^  node\d+ .* pid (\d+) `).FindAllStringSubmatch(c.output(), -1) {
		if pid, err := strconv.Atoi(m[1]); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
