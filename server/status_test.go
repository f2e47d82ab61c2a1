package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/chronos-timer/chronos/internal/logtest"
	"github.com/chronos-timer/chronos/server/observe"
)

// TestStatusReportsResync proves GET /status and the metrics tell an
// operator how the latest resync went: a lone node's resync of its own
// timers completes at once, and the status counts what it holds and says
// which instance number and version the node runs with, and that it has
// no peer to reach.
func TestStatusReportsResync(t *testing.T) {
	srv, url, _, _, _ := startServer(t, "[identity]\ninstance_id = 7\n[cluster]\nlocalhost = %[1]s\nnode = %[1]s\n", &logtest.Buffer{})
	resp, err := http.Post(url+"/timers", "application/json", bytes.NewReader(benchBody))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	runs := srv.Status().Resync.Runs
	srv.Resync()
	status, body := fetch(t, http.MethodGet, url+observe.StatusPath)
	var st observe.Status
	if err := json.Unmarshal([]byte(body), &st); status != http.StatusOK || err != nil {
		t.Fatalf("GET /status: status %d, %v:\n%s", status, err, body)
	}
	if st.Resync.State != "completed" || st.Resync.Runs != runs+1 || st.Resync.Peers != 1 || st.Timers != 1 {
		t.Errorf("GET /status = %+v, want a completed resync over 1 peer and 1 timer", st)
	}
	if st.Address != srv.config().Localhost || st.ViewID == "" || len(st.Nodes) != 1 {
		t.Errorf("GET /status = %+v, want this node alone in its view", st)
	}
	if st.Instance != 7 || st.InstanceDerived || st.Version != observe.BuildVersion() || st.Version == "" {
		t.Errorf("GET /status = %+v, want instance 7 as configured and version %q", st, observe.BuildVersion())
	}
	if !strings.Contains(body, `"peers": [],`) {
		t.Errorf("GET /status = %s, want an empty list of peers", body)
	}
	_, metrics := fetch(t, http.MethodGet, url+observe.MetricsPath)
	for _, want := range []string{"chronos_timers 1", "chronos_resync_running 0", "chronos_resync_failed_peers 0",
		`chronos_build_info{goversion="` + runtime.Version() + `",version="` + observe.BuildVersion() + `"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("GET /metrics lacks %q", want)
		}
	}
}
