package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestStatusReportsResync proves GET /status and the metrics tell an
// operator how the latest resync went: a lone node's resync of its own
// timers completes at once, and the status counts what it holds.
func TestStatusReportsResync(t *testing.T) {
	srv, url, _, _, _ := startServer(t, "[cluster]\nlocalhost = %[1]s\nnode = %[1]s\n", &syncBuffer{})
	resp, err := http.Post(url+"/timers", "application/json", bytes.NewReader(benchBody))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	runs := srv.Status().Resync.Runs
	srv.Resync()
	status, body := fetch(t, http.MethodGet, url+StatusPath)
	var st Status
	if err := json.Unmarshal([]byte(body), &st); status != http.StatusOK || err != nil {
		t.Fatalf("GET /status: status %d, %v:\n%s", status, err, body)
	}
	if st.Resync.State != "completed" || st.Resync.Runs != runs+1 || st.Resync.Peers != 1 || st.Timers != 1 {
		t.Errorf("GET /status = %+v, want a completed resync over 1 peer and 1 timer", st)
	}
	if st.Address != srv.config().Localhost || st.ViewID == "" || len(st.Nodes) != 1 {
		t.Errorf("GET /status = %+v, want this node alone in its view", st)
	}
	_, metrics := fetch(t, http.MethodGet, url+MetricsPath)
	for _, want := range []string{"chronos_timers 1", "chronos_resync_running 0", "chronos_resync_failed_peers 0"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("GET /metrics lacks %q", want)
		}
	}
}
