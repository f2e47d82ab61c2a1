//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/proctest"
)

// scrape reads the process's /metrics into series -> value; a series is
// its name and labels as the exposition writes them, labels in name order
// (`chronos_tagged_timers{tag="CALL"}`). Histogram buckets are left out.
func scrape(t *testing.T, c *http.Client, url string) map[string]float64 {
	t.Helper()
	resp, err := c.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d, %v", resp.StatusCode, err)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(body), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if strings.HasPrefix(line, "#") || i < 0 || strings.Contains(line, "_bucket{") {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// step is what /metrics must say after one step of the test: series
// with their exact values, and the tag gauges, exactly these and no
// other.
type step struct {
	name   string
	series map[string]float64
	tags   map[string]float64
}

// mismatch returns what of s the scrape m does not show, or "".
func (s step) mismatch(m map[string]float64) string {
	var bad []string
	for k, want := range s.series {
		if got, ok := m[k]; !ok || got != want {
			bad = append(bad, fmt.Sprintf("%s = %v (present %v), want %v", k, got, ok, want))
		}
	}
	tags := map[string]float64{}
	for k, v := range m {
		if tag, ok := strings.CutPrefix(k, `chronos_tagged_timers{tag="`); ok {
			tags[strings.TrimSuffix(tag, `"}`)] = v
		}
	}
	if fmt.Sprint(tags) != fmt.Sprint(s.tags) {
		bad = append(bad, fmt.Sprintf("tags %v, want %v", tags, s.tags))
	}
	slices.Sort(bad)
	return strings.Join(bad, "; ")
}

// check fails unless /metrics says what s wants now.
func (s step) check(t *testing.T, c *http.Client, url string) {
	t.Helper()
	if bad := s.mismatch(scrape(t, c, url)); bad != "" {
		t.Fatalf("after %s: %s", s.name, bad)
	}
}

// await scrapes until /metrics says what s wants, for what a callback's
// outcome changes: the node learns it after the callback has arrived.
// The deadline is a ceiling against a hang, never a measured timing.
func (s step) await(t *testing.T, c *http.Client, url string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		bad := s.mismatch(scrape(t, c, url))
		if bad == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, still after %v: %s", s.name, waitTimeout, bad)
		}
	}
}

// statusSink is a callback endpoint answering every pop with status and
// telling the test of each on a channel.
func statusSink(t *testing.T, status int) (string, <-chan struct{}) {
	t.Helper()
	pops := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		pops <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/cb", pops
}

// tagged is a timer definition with statistics tags (type:count pairs);
// repeatFor 0 is a one-shot.
func tagged(interval, repeatFor int, uri string, tags ...any) string {
	var info []map[string]any
	for i := 0; i < len(tags); i += 2 {
		info = append(info, map[string]any{"type": tags[i], "count": tags[i+1]})
	}
	timing := map[string]any{"interval": interval}
	if repeatFor > 0 {
		timing["repeat-for"] = repeatFor
	}
	b, err := json.Marshal(map[string]any{
		"timing":     timing,
		"callback":   map[string]any{"http": map[string]any{"uri": uri}},
		"statistics": map[string]any{"tag-info": info},
	})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestProcessMetrics proves the binary's /metrics through a timer's life:
// creates count their timers and tags, a pop is counted with its lateness
// and its finished timer leaves the tag gauges, an update moves the
// counts to the new tags, a delete takes them away, and a failed callback
// is counted while its timer (which knows of the pop missed) keeps its
// tags. Every request is counted by route and status code.
func TestProcessMetrics(t *testing.T) {
	bin := proctest.Chronos(t)
	ok, okPops := statusSink(t, http.StatusOK)
	failing, failedPops := statusSink(t, http.StatusInternalServerError)
	p := startProcess(t, bin)
	c := &http.Client{Timeout: waitTimeout}
	const hour = 3600

	step{name: "start", series: map[string]float64{
		"chronos_timers": 0, "chronos_pops_total": 0, "chronos_statistics_tags": 0,
	}, tags: map[string]float64{}}.check(t, c, p.url)

	status, a := do(t, c, http.MethodPost, p.url+"/timers", tagged(hour, hour, ok, "CALL", 2, "SUB", 1))
	if status != http.StatusOK {
		t.Fatalf("create A: %d", status)
	}
	status, b := do(t, c, http.MethodPost, p.url+"/timers", tagged(hour, hour, ok, "CALL", 1))
	if status != http.StatusOK {
		t.Fatalf("create B: %d", status)
	}
	if status, _ := do(t, c, http.MethodPost, p.url+"/timers", tagged(1, 0, ok, "POP", 5)); status != http.StatusOK {
		t.Fatalf("create C: %d", status)
	}
	created := map[string]float64{
		`chronos_http_requests_total{code="200",route="timers"}`: 3, "chronos_timers": 3, "chronos_statistics_tags": 3,
	}
	step{name: "three creates", series: created, tags: map[string]float64{"CALL": 3, "SUB": 1, "POP": 5}}.check(t, c, p.url)

	receive(t, okPops, "C's pop")
	step{name: "C's pop", series: map[string]float64{
		"chronos_pops_total": 1, "chronos_pop_lateness_seconds_count": 1, "chronos_callback_failures_total": 0,
		`chronos_outbound_requests_total{kind="callback",outcome="ok"}`: 1,
		"chronos_timers": 2, "chronos_statistics_tags": 2,
	}, tags: map[string]float64{"CALL": 3, "SUB": 1}}.await(t, c, p.url)

	if status, _ := do(t, c, http.MethodPut, p.url+a, tagged(hour, hour, ok, "SUB", 4, "NEW", 1)); status != http.StatusOK {
		t.Fatalf("update A: %d", status)
	}
	step{name: "A's update", series: map[string]float64{
		`chronos_http_requests_total{code="200",route="timer"}`: 1, "chronos_timers": 2, "chronos_statistics_tags": 3,
	}, tags: map[string]float64{"CALL": 1, "SUB": 4, "NEW": 1}}.check(t, c, p.url)

	if status, _ := do(t, c, http.MethodDelete, p.url+b, ""); status != http.StatusOK {
		t.Fatalf("delete B: %d", status)
	}
	step{name: "B's delete", series: map[string]float64{
		`chronos_http_requests_total{code="200",route="timer"}`: 2, "chronos_timers": 1, "chronos_statistics_tags": 2,
	}, tags: map[string]float64{"SUB": 4, "NEW": 1}}.check(t, c, p.url)

	if status, _ := do(t, c, http.MethodPost, p.url+"/timers", tagged(1, 0, failing, "FAIL", 1)); status != http.StatusOK {
		t.Fatalf("create D: %d", status)
	}
	receive(t, failedPops, "D's pop")
	step{name: "D's failed pop", series: map[string]float64{
		"chronos_pops_total": 2, "chronos_pop_lateness_seconds_count": 2, "chronos_callback_failures_total": 1,
		`chronos_outbound_requests_total{kind="callback",outcome="ok"}`: 2,
		`chronos_http_requests_total{code="200",route="timers"}`:        4,
		"chronos_timers": 2, "chronos_statistics_tags": 3,
	}, tags: map[string]float64{"SUB": 4, "NEW": 1, "FAIL": 1}}.await(t, c, p.url)

	if status, _ := do(t, c, http.MethodGet, p.url+"/no/such/path", ""); status != http.StatusNotFound {
		t.Fatalf("GET /no/such/path: %d, want 404", status)
	}
	step{name: "a request to no route", series: map[string]float64{
		`chronos_http_requests_total{code="404",route="other"}`: 1,
	}, tags: map[string]float64{"SUB": 4, "NEW": 1, "FAIL": 1}}.check(t, c, p.url)
}

// receive waits for one value on ch, or fails the test after waitTimeout.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("no %s within %v", what, waitTimeout)
		var zero T
		return zero
	}
}
