package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chronos-timer/chronos/internal/chantest"
	"github.com/chronos-timer/chronos/internal/logtest"
	"github.com/chronos-timer/chronos/server/lifecycle"
	"github.com/chronos-timer/chronos/server/observe"
)

// metricValue returns the value of one series in a Prometheus text
// exposition: series is its name and labels as written there, labels in
// name order (`chronos_http_requests_total{code="200",route="ping"}`).
func metricValue(exposition, series string) (float64, bool) {
	for line := range strings.SplitSeq(exposition, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// wantMetrics fails unless each series of want has its value in the
// server's /metrics; a value of -1 wants the series absent.
func wantMetrics(t *testing.T, url string, want map[string]float64) {
	t.Helper()
	_, body := fetch(t, http.MethodGet, url+observe.MetricsPath)
	for series, w := range want {
		got, ok := metricValue(body, series)
		switch {
		case w < 0 && ok:
			t.Errorf("%s = %v, want no such series", series, got)
		case w >= 0 && (!ok || got != w):
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, w)
		}
	}
}

// TestInboundRequestsCounted proves every request a server answers is
// counted once by its route and status code, the node's API, /status and
// /metrics alike.
func TestInboundRequestsCounted(t *testing.T) {
	_, url, _, _, _ := startServer(t, "", &logtest.Buffer{})
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/ping"}, {http.MethodGet, "/ping"}, {http.MethodHead, "/ping"},
		{http.MethodPost, "/timers"}, // no body: 400
		{http.MethodDelete, "/timers/nonsense"},
		{http.MethodGet, "/no/such/thing"},
		{http.MethodGet, observe.StatusPath},
		{http.MethodGet, observe.MetricsPath},
	} {
		fetch(t, r.method, url+r.path)
	}
	wantMetrics(t, url, map[string]float64{
		`chronos_http_requests_total{code="200",route="ping"}`:    3,
		`chronos_http_requests_total{code="400",route="timers"}`:  1,
		`chronos_http_requests_total{code="400",route="timer"}`:   1,
		`chronos_http_requests_total{code="404",route="other"}`:   1,
		`chronos_http_requests_total{code="200",route="status"}`:  1,
		`chronos_http_requests_total{code="200",route="metrics"}`: 1, // the scrape reading it is counted once it has answered
		`chronos_http_requests_total{code="200",route="timers"}`:  -1,
	})
}

// fakePeer is a cluster member on loopback that takes every replication
// message and answers resync pages with no timers.
func fakePeer(t *testing.T) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, `{"timers":[]}`)
		}
	}))
}

// TestServerTracksPeerReachability proves the server learns each peer's
// reachability from its replication messages: GET /status shows the peer
// reachable once it answered, then unreachable with the error once it is
// gone, and the log says so.
func TestServerTracksPeerReachability(t *testing.T) {
	peer := fakePeer(t)
	peerAddr := strings.TrimPrefix(peer.URL, "http://")
	logs := &logtest.Buffer{}
	srv, url, _, _, _ := startServer(t, "[cluster]\nlocalhost = %[1]s\nnode = %[1]s\nnode = "+peerAddr+"\n", logs)
	create := func() {
		t.Helper()
		resp, err := http.Post(url+"/timers", "application/json", strings.NewReader(`{"timing":{"interval":86400},"callback":{"http":{"uri":"http://127.0.0.1:9/cb"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// The node answers once every replica has: by then the outcome is
	// known.
	create()
	if ps := srv.Status().Peers; len(ps) != 1 || ps[0].Address != peerAddr || ps[0].State != observe.ReachReachable {
		t.Fatalf("peers %+v, want %s reachable", ps, peerAddr)
	}
	peer.Close()
	create()
	_, body := fetch(t, http.MethodGet, url+observe.StatusPath)
	var st observe.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Peers) != 1 || st.Peers[0].State != observe.ReachUnreachable || st.Peers[0].LastError == "" || st.Peers[0].Since == nil {
		t.Fatalf("GET /status peers %+v, want %s unreachable with its error", st.Peers, peerAddr)
	}
	if want := `msg="peer unreachable" node=` + srv.config().Localhost + ` peer=` + peerAddr; !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks %s:\n%s", want, logs.String())
	}
}

// TestReloadSetsLogLevelAndTellsMembership proves a reload takes the log
// level the files give now, on the logger OpenLog built, and logs a
// membership change with the old and new view IDs and who joined.
func TestReloadSetsLogLevelAndTellsMembership(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	self := ln.Addr().String()
	local := writeFile(t, dir, "chronos.conf", "[logging]\nlevel = info\nformat = json\n")
	cluster := writeFile(t, dir, "chronos_cluster.conf", "[cluster]\nlocalhost = "+self+"\nnode = "+self+"\n")
	cfg, err := parseAndLoad(append(noFiles, "--local-config-file", local, "--cluster-config-file", cluster))
	if err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Buffer{}
	log, closeLog, err := lifecycle.OpenLog(cfg, logs)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLog()
	srv, err := New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	oldView := srv.Status().ViewID
	log.Debug("before")
	writeFile(t, "", local, "[logging]\nlevel = debug\nformat = json\n")
	writeFile(t, "", cluster, "[cluster]\nlocalhost = "+self+"\nnode = "+self+"\njoining = 127.0.0.1:9\n")
	if err := srv.Reload(); err != nil {
		t.Fatal(err)
	}
	log.Debug("after")
	var changed map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if rec["msg"] == "membership changed" {
			changed = rec
		}
	}
	if out := logs.String(); strings.Contains(out, `"msg":"before"`) || !strings.Contains(out, `"msg":"after"`) || !strings.Contains(out, `"msg":"log level changed"`) {
		t.Errorf("log %s, want debug lines only after the reload, and the change told", out)
	}
	newView := srv.Status().ViewID
	if changed == nil || changed["old_view"] != oldView || changed["new_view"] != newView || oldView == newView ||
		fmt.Sprint(changed["joining"]) != "[127.0.0.1:9]" || fmt.Sprint(changed["added"]) != "[127.0.0.1:9]" {
		t.Errorf("membership line %v, want views %s to %s and 127.0.0.1:9 joining", changed, oldView, newView)
	}
}

// TestPopMetrics proves the tag gauges count a timer held, and that a pop
// is counted, and its lateness observed, by the time its callback
// arrives. (The process test in cmd/chronos follows the gauges through
// updates, pops and deletes.)
func TestPopMetrics(t *testing.T) {
	pops := make(chan struct{}, 1)
	sink := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { pops <- struct{}{} }))
	defer sink.Close()
	_, url, _, _, _ := startServer(t, "", &logtest.Buffer{})
	body := `{"timing":{"interval":86400},"callback":{"http":{"uri":"` + sink.URL + `"}},"statistics":{"tag-info":[{"type":"CALL","count":2}]}}`
	resp, err := http.Post(url+"/timers", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wantMetrics(t, url, map[string]float64{
		`chronos_tagged_timers{tag="CALL"}`: 2, "chronos_statistics_tags": 1, "chronos_pops_total": 0,
	})
	// Updated to pop at once.
	req, _ := http.NewRequest(http.MethodPut, url+resp.Header.Get("Location"), strings.NewReader(strings.Replace(body, "86400", "0", 1)))
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	chantest.Receive(t, pops, "the callback")
	wantMetrics(t, url, map[string]float64{"chronos_pops_total": 1, "chronos_pop_lateness_seconds_count": 1})
}

// TestEveryMetricIsDocumented proves docs/metrics.md names every chronos_
// metric a node serves, so that the page cannot fall behind the code.
func TestEveryMetricIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, url, _, _, _ := startServer(t, "", &logtest.Buffer{})
	resp, err := http.Post(url+"/timers", "application/json", strings.NewReader(
		`{"timing":{"interval":86400},"callback":{"http":{"uri":"http://127.0.0.1:9/cb"}},"statistics":{"tag-info":[{"type":"T"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, body := fetch(t, http.MethodGet, url+observe.MetricsPath)
	names := regexp.MustCompile(`(?m)^# TYPE (chronos_\w+) `).FindAllStringSubmatch(body, -1)
	if len(names) < 20 {
		t.Fatalf("only %d chronos_ metrics served:\n%s", len(names), body)
	}
	for _, n := range names {
		if !strings.Contains(string(doc), "`"+n[1]+"`") {
			t.Errorf("docs/metrics.md does not name %s", n[1])
		}
	}
}
