package localcluster

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chronos-timer/chronos/server/config"
)

// TestValidate proves that each bad option is refused with its name and
// value, and that the defaults with a binary are accepted, with or
// without a sink, and on free ports (base port 0).
func TestValidate(t *testing.T) {
	ok := DefaultOptions()
	ok.Bin = "/bin/chronos"
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tests := []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"no nodes", func(o *Options) { o.Nodes = 0 }, "nodes 0 is not in 1..16"},
		{"too many nodes", func(o *Options) { o.Nodes = 17 }, "nodes 17 is not in 1..16"},
		{"port below 0", func(o *Options) { o.BasePort = -1 }, "base port -1 with 3 nodes"},
		{"ports past 65535", func(o *Options) { o.BasePort = 65534 }, "base port 65534 with 3 nodes"},
		{"no binary", func(o *Options) { o.Bin = "" }, "no chronos binary"},
		{"sink a name", func(o *Options) { o.Sink = "localhost:9999" }, `sink "localhost:9999" is not a loopback address`},
		{"sink not loopback", func(o *Options) { o.Sink = "192.0.2.1:9999" }, "not a loopback address"},
		{"sink without port", func(o *Options) { o.Sink = "127.0.0.1" }, "not a loopback address"},
		{"sink on a node", func(o *Options) { o.Sink = "127.0.0.1:7254" }, "sink 127.0.0.1:7254 is node 2's address"},
		{"dir with a comment", func(o *Options) { o.Dir = "/tmp/a#b" }, "holds '#'"},
	}
	for _, tt := range tests {
		o := ok
		tt.change(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	none := ok
	none.Sink = ""
	if err := none.Validate(); err != nil {
		t.Errorf("no sink: %v", err)
	}
	free := ok
	free.BasePort = 0
	if err := free.Validate(); err != nil {
		t.Errorf("base port 0 (free ports): %v", err)
	}
}

// TestFiles proves that the written files load as the node loads them,
// with no warning: each node listens on its own port of the base port's
// run, has that address in the cluster, shares the membership and a
// 16-byte key that differs from run to run, and logs into its own folder.
func TestFiles(t *testing.T) {
	o := DefaultOptions()
	o.Nodes, o.BasePort = 4, 8100
	var keys []string
	for run := range 2 {
		dir := t.TempDir()
		files := o.files(dir, o.addrs(), 0)
		if _, err := o.writeFiles(files); err != nil {
			t.Fatal(err)
		}
		want := []string{"127.0.0.1:8100", "127.0.0.1:8101", "127.0.0.1:8102", "127.0.0.1:8103"}
		for i, f := range files {
			fl := config.Flags{LocalConfigFile: f.local, ClusterConfigFile: f.cluster}
			cfg, err := fl.Load()
			if err != nil {
				t.Fatalf("run %d, %s: %v", run, f.name, err)
			}
			if len(cfg.Warnings) > 0 {
				t.Errorf("run %d, %s: warnings %+v, want none", run, f.name, cfg.Warnings)
			}
			if cfg.ListenAddress() != want[i] || cfg.Localhost != want[i] || !slices.Equal(cfg.Cluster.Nodes, want) {
				t.Errorf("%s: listens on %s as %s in %v, want %s in %v", f.name, cfg.ListenAddress(), cfg.Localhost, cfg.Cluster.Nodes, want[i], want)
			}
			if cfg.LogFolder != filepath.Join(dir, f.name) {
				t.Errorf("%s: log folder %q, want %q", f.name, cfg.LogFolder, filepath.Join(dir, f.name))
			}
			if len(cfg.ClusterKey) != 32 {
				t.Errorf("%s: key of %d hex digits, want 32", f.name, len(cfg.ClusterKey))
			}
			if i == 0 {
				keys = append(keys, cfg.ClusterKey)
			}
		}
		info, err := os.Stat(files[0].cluster)
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("cluster file mode %v (%v), want 0600: it holds the key", info.Mode(), err)
		}
	}
	if keys[0] == keys[1] {
		t.Errorf("two runs wrote the same key %s", keys[0])
	}
}

// TestPrefixed proves that a source's output comes out as whole lines,
// each after its prefix, however the writes cut it, and that a last line
// without a newline is printed by Flush. A line held back without its end comes
// out in pieces once longer than the limit.
func TestPrefixed(t *testing.T) {
	var out strings.Builder
	l := newLines(&out)
	a, b := l.writer("node1"), l.writer("sink")
	for _, w := range []struct {
		to   *prefixed
		text string
	}{{a, "first "}, {b, "pop 1\n"}, {a, "line\nsecond"}, {a, " line\nthird"}} {
		if _, err := w.to.Write([]byte(w.text)); err != nil {
			t.Fatal(err)
		}
	}
	a.Flush()
	want := "sink  | pop 1\nnode1 | first line\nnode1 | second line\nnode1 | third\n"
	if out.String() != want {
		t.Errorf("output\n%q\nwant\n%q", out.String(), want)
	}

	out.Reset()
	long := strings.Repeat("x", maxLineBytes+10)
	_, _ = a.Write([]byte(long))
	_, _ = a.Write([]byte("\n"))
	want = "node1 | " + long[:maxLineBytes] + "\nnode1 | " + long[maxLineBytes:] + "\n"
	if out.String() != want {
		t.Errorf("a long line came out as %d bytes in %d lines, want %d in 2", out.Len(), strings.Count(out.String(), "\n"), len(want))
	}
}

// TestSinkLine proves what the sink prints of a pop: method, path,
// sequence number, timer and the body, quoted and cut short when long.
func TestSinkLine(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/cb", strings.NewReader("hello"))
	r.Header.Set("X-Sequence-Number", "3")
	r.Header.Set("X-Chronos-Timer", "0123456789abcdef")
	if got, want := describe(r), `POST /cb X-Sequence-Number: 3 X-Chronos-Timer: 0123456789abcdef body: "hello"`; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
	long := strings.Repeat("é", maxSinkShown)
	got := describe(httptest.NewRequest(http.MethodPost, "/cb?x=1", strings.NewReader(long)))
	if !strings.HasPrefix(got, "POST /cb?x=1 ") || !strings.HasSuffix(got, `..."`) || len(got) > 3*maxSinkShown {
		t.Errorf("describe of a %d-byte body = %q, want it cut to %d bytes", len(long), got, maxSinkShown)
	}
}

// TestCheckFree proves that a taken address is refused by name before
// anything starts.
func TestCheckFree(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	o := Options{Nodes: 1, Bin: "chronos"}
	o.BasePort, _ = strconv.Atoi(port)
	if err := o.checkFree(); err == nil || !strings.Contains(err.Error(), ln.Addr().String()+" is in use") {
		t.Errorf("checkFree with %s taken = %v, want it named", ln.Addr(), err)
	}
	o.BasePort, o.Sink = 0, ln.Addr().String()
	o.Nodes = 0 // only the sink
	if err := o.checkFree(); err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Errorf("checkFree with the sink's %s taken = %v, want it named", ln.Addr(), err)
	}
}

// TestSinkBurst proves that the sink prints every pop of a burst exactly
// once, each on a whole line of its own, however many callbacks arrive at
// once: its handlers run concurrently, and once shared one line buffer,
// which repeated some pops and lost others (and fails under -race).
func TestSinkBurst(t *testing.T) {
	const pops, senders = 400, 16
	var out strings.Builder
	s, err := startSink("127.0.0.1:0", newLines(&out))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
	seqs := make(chan int)
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range seqs {
				req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/cb", strings.NewReader(fmt.Sprintf("pop %d", seq)))
				req.Header.Set("X-Sequence-Number", strconv.Itoa(seq))
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("pop %d: %v", seq, err)
					continue
				}
				resp.Body.Close()
			}
		}()
	}
	for seq := 1; seq <= pops; seq++ {
		seqs <- seq
	}
	close(seqs)
	wg.Wait()
	s.stop()

	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		seen[line]++
	}
	for seq := 1; seq <= pops; seq++ {
		line := fmt.Sprintf(`sink  | POST /cb X-Sequence-Number: %d X-Chronos-Timer:  body: "pop %d"`, seq, seq)
		if seen[line] != 1 {
			t.Errorf("pop %d printed %d times, want once: %q", seq, seen[line], line)
		}
		delete(seen, line)
	}
	for line, n := range seen {
		t.Errorf("%d unexpected lines %q", n, line)
	}
}
