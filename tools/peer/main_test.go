package main

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain serves as the worker or the bare server when the tool under
// test starts this binary in a role.
func TestMain(m *testing.M) {
	serveRoleIfAsked()
	os.Exit(m.Run())
}

// TestPeerSmall runs the tool end to end on redis-server, when it is on
// PATH: every timer it creates pops once, never early, and every figure
// of the report is measured.
func TestPeerSmall(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("the peer under test, redis-server, is not on PATH, so there is nothing to measure; installing it lifts the skip (Debian: apt-get install redis-server)")
	}
	o := options{timers: 200, concurrency: 8, workers: 8, window: 200 * time.Millisecond, lead: time.Second,
		delayedCheck: 100 * time.Millisecond, taskCheck: 100 * time.Millisecond, fsync: "everysec", redis: "redis-server"}
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	rep, err := run(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rep.created != o.timers || rep.lost != 0 || rep.early != 0 || rep.duplicated != 0 || len(rep.lateness) != o.timers {
		t.Fatalf("created %d, %d lost, %d early, %d duplicated, %d popped: want all popped once, none early",
			rep.created, rep.lost, rep.early, rep.duplicated, len(rep.lateness))
	}
	if rep.bareCreateTime <= 0 || rep.barePopTime <= 0 || rep.rssBefore <= 0 || rep.cpu <= 0 || rep.loadEnd == "" {
		t.Fatalf("figures not measured: %+v", rep)
	}
	var out strings.Builder
	rep.write(&out)
	for _, line := range []string{"creates:", "pops:", "lateness:", "memory:", "cpu:", "load:"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("report has no %s line:\n%s", line, out.String())
		}
	}
}
