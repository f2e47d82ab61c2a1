package server

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/config"
)

// BenchmarkRecovery measures what a restart on a storage folder costs: it
// has a node hold -recovery-timers timers (default 1M) created through
// its API, with its storage on, stops it cleanly, and then times building
// a node on the same folder, which reads the snapshot and the log back and
// holds every timer again. It reports the folder's bytes per timer and
// the seconds the recovery took (docs/design.md section 5):
//
//	go test -run '^$' -bench Recovery -benchtime 1x ./server
func BenchmarkRecovery(b *testing.B) {
	timers := 1_000_000
	if v := os.Getenv("RECOVERY_TIMERS"); v != "" {
		timers, _ = strconv.Atoi(v)
	}
	dir := b.TempDir()
	cfg := config.Default()
	cfg.StorageDir = dir
	srv, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	replies := make(chan node.Response, 1024)
	go func() {
		for i := 0; i < timers; i += 1000 {
			srv.serial.Do(func() {
				for j := i; j < min(i+1000, timers); j++ {
					body := fmt.Appendf(nil, `{"timing":{"interval":3600},"callback":{"http":{"uri":"http://127.0.0.1:9/cb/%d","opaque":"recovery-%015d"}}}`, j%100, j)
					srv.node.Handle(node.Request{Method: "POST", URL: "/timers", Header: node.Header{}, Body: body}, func(r node.Response) { replies <- r })
				}
			})
		}
	}()
	for range timers {
		if r := <-replies; r.Status != 200 {
			b.Fatalf("create: %d %s", r.Status, r.Body)
		}
	}
	srv.shutdown()
	var bytes int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, _ error) error {
		if info, err := d.Info(); err == nil && !d.IsDir() {
			bytes += info.Size()
		}
		return nil
	})
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		again, err := New(cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		var held int
		again.serial.Do(func() { held = again.node.Stats().Timers })
		if held != timers {
			b.Fatalf("recovered %d timers, want %d", held, timers)
		}
		b.ReportMetric(took.Seconds(), "recovery-s")
		again.shutdown()
	}
	b.ReportMetric(float64(bytes)/float64(timers), "disk-B/timer")
}
