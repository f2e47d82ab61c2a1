package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/netsim"
)

// benchPlan is a healthy 5-node cluster holding live timers created in the
// first 10 s, popping every 10 to 30 s for the whole run.
func benchPlan(timers int, end time.Duration) *Plan {
	p := &Plan{Name: "bench", Seed: 1, Nodes: 5, Callbacks: 4, Clients: 4, Net: netsim.DefaultOptions(), End: end}
	for i := range timers {
		p.Steps = append(p.Steps, Step{At: time.Duration(i) * 10 * time.Second / time.Duration(timers), Op: OpCreate,
			Timer: fmt.Sprintf("t%d", i), Client: 1 + i%4, Via: 1 + i%5, Callback: 1 + i%4, RF: 2,
			Interval: time.Duration(10+i%21) * time.Second, RepeatFor: time.Hour})
	}
	return p
}

// BenchmarkSimSpeed measures simulated seconds per wall second for a 5-node
// cluster with 1,000 live timers (docs/design.md section 5: target >= 1,000),
// with every request free and with the load model on (modest service times
// on every node and callback endpoint).
func BenchmarkSimSpeed(b *testing.B) {
	loaded := netsim.DefaultOptions()
	loaded.NodeWorkers, loaded.NodeServiceTime, loaded.NodeSendTime = 4, 50*time.Microsecond, 100*time.Microsecond
	loaded.EndpointWorkers, loaded.EndpointServiceTime = 8, time.Millisecond
	for _, c := range []struct {
		name string
		net  netsim.Options
	}{{"free", netsim.DefaultOptions()}, {"loaded", loaded}} {
		b.Run(c.name, func(b *testing.B) {
			const simulated = 10 * time.Minute
			p := benchPlan(1000, simulated)
			p.Net = c.net
			start := time.Now()
			var events uint64
			for b.Loop() {
				res := Run(p, Options{SkipCheck: true})
				if res.Panic != "" {
					b.Fatal(res.Panic)
				}
				events += res.Events
			}
			wall := time.Since(start).Seconds()
			b.ReportMetric(simulated.Seconds()*float64(b.N)/wall, "sim-s/s")
			b.ReportMetric(float64(events)/wall, "events/s")
		})
	}
}
