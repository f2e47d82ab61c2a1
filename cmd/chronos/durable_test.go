package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/proctest"
)

// countingSink is a callback endpoint on loopback that counts the pops of
// each opaque.
type countingSink struct {
	url string
	mu  sync.Mutex
	got map[string]int
}

func newCountingSink(t *testing.T) *countingSink {
	t.Helper()
	s := &countingSink{got: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got[string(body)]++
		s.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/cb"
	return s
}

// missing lists the opaques of want that have not popped.
func (s *countingSink) missing(want []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, o := range want {
		if s.got[o] == 0 {
			out = append(out, o)
		}
	}
	return out
}

// storedMember is member i of a cluster of addrs on loopback, keeping its
// timers in its own storage folder; it is not started.
func storedMember(t *testing.T, addrs []string, i int, key string) *process {
	t.Helper()
	dir := t.TempDir()
	host, port, _ := net.SplitHostPort(addrs[i])
	p := &process{url: "http://" + addrs[i], addr: addrs[i],
		localPath: filepath.Join(dir, "chronos.conf"), clusterPath: filepath.Join(dir, "chronos_cluster.conf"),
		files: []string{"--storage-dir", filepath.Join(dir, "data")}}
	local := fmt.Sprintf("[http]\nbind-address = %s\nbind-port = %s\n\n[logging]\nlevel = 3\n", host, port)
	cluster := "[cluster]\nlocalhost = %[1]s\nnode = " + strings.Join(addrs, "\nnode = ") + "\nkey = " + key + "\n"
	if err := os.WriteFile(p.localPath, []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	p.writeCluster(t, cluster)
	return p
}

// stop ends p with sig and waits for it to exit.
func (p *process) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	p.signal(t, sig)
	select {
	case <-p.proc.Done():
	case <-time.After(waitTimeout):
		t.Fatalf("chronos %s did not exit on %v", p.addr, sig)
	}
}

// TestProcessStorageKeepsTimersAcrossRestarts proves durability
// (docs/design.md 4.16) on real processes on loopback: a three-node cluster keeping its timers on
// disk is killed all at once (SIGKILL) and started again, then restarted
// one node at a time (SIGTERM), and every timer it acknowledged before,
// replication factor 1 and 2, still pops; and a node restarted on its
// folder recovers its timers before it serves anything.
func TestProcessStorageKeepsTimersAcrossRestarts(t *testing.T) {
	t.Parallel() // waits on real timers, not on the CPU (Makefile: -parallel)
	bin := proctest.Chronos(t)
	sink := newCountingSink(t)
	addrs := []string{proctest.FreeAddr(t), proctest.FreeAddr(t), proctest.FreeAddr(t)}
	procs := make([]*process, len(addrs))
	for i := range procs {
		procs[i] = storedMember(t, addrs, i, "durable-test-cluster-key")
		if err := procs[i].start(t, bin, waitTimeout); err != nil {
			t.Fatal(err)
		}
	}
	client := &http.Client{Timeout: 5 * time.Second}
	var opaques []string
	const interval = 12 // s: past both restarts
	for i := range 40 {
		rf := 1 + i%2
		o := fmt.Sprintf("durable-%d-rf%d", i, rf)
		body := fmt.Sprintf(`{"timing":{"interval":%d},"callback":{"http":{"uri":%q,"opaque":%q}},"reliability":{"replication-factor":%d}}`,
			interval, sink.url, o, rf)
		if status, _ := do(t, client, "POST", procs[i%3].url+"/timers", body); status != 200 {
			t.Fatalf("create %s: %d, want 200", o, status)
		}
		opaques = append(opaques, o)
	}
	created := time.Now()

	for _, p := range procs { // a power cut: every node at once
		p.stop(t, syscall.SIGKILL)
	}
	for _, p := range procs {
		if err := p.start(t, bin, waitTimeout); err != nil {
			t.Fatal(err)
		}
		// The node answers /status as soon as it serves, which may be
		// before its "serving" line has come through the output pipe.
		if err := p.proc.AwaitLog("msg=serving", waitTimeout); err != nil {
			t.Fatal(err)
		}
		log := p.proc.Log().String()
		rec, serving := strings.Index(log, "storage recovered"), strings.Index(log, "msg=serving")
		if rec < 0 || rec > serving || strings.Contains(log[rec:serving], "entries=0 ") {
			t.Fatalf("chronos %s: want its stored timers recovered before it serves; log:\n%s", p.addr, log)
		}
	}
	for _, p := range procs { // a rolling restart
		p.stop(t, syscall.SIGTERM)
		if err := p.start(t, bin, waitTimeout); err != nil {
			t.Fatal(err)
		}
	}
	if time.Since(created) > interval*time.Second {
		t.Skipf("the restarts took %v, past the timers' due time: the machine is too slow for this test", time.Since(created))
	}
	// Due at interval, at most two ranks of 2 s later, and slack for a
	// loaded machine.
	deadline := created.Add(interval*time.Second + 4*time.Second + waitTimeout)
	for len(sink.missing(opaques)) > 0 && time.Now().Before(deadline) {
		time.Sleep(pollEvery)
	}
	if m := sink.missing(opaques); len(m) > 0 {
		t.Fatalf("%d of %d acknowledged timers never popped: %v", len(m), len(opaques), m)
	}
}
