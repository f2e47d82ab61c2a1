package nemesis

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// TestRecordRoundTrip proves a saved record loads back as it was, and
// that the table files each finding under the round whose time holds
// it, with a total.
func TestRecordRoundTrip(t *testing.T) {
	rec := Record{Seed: 9, Bounds: checker.DefaultRealBounds(), Rounds: []RoundTimes{
		{Round: Round{Kind: "none"}, To: 10 * time.Second},
		{Round: Round{N: 1, Kind: Kill, Nodes: []int{0}, For: 5 * time.Second}, From: 10 * time.Second, To: 30 * time.Second},
		{Round: Round{Kind: "tail"}, From: 30 * time.Second, To: 40 * time.Second},
	}}
	rec.History.Members = []string{"n1"}
	path := filepath.Join(t.TempDir(), "history.json")
	if err := rec.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := LoadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Seed != 9 || len(got.Rounds) != 3 || got.Rounds[1].Kind != Kill || got.Bounds != rec.Bounds {
		t.Fatalf("got %+v, want the record saved", got)
	}
	v := checker.RealVerdict{
		Findings: []checker.RealFinding{{Kind: checker.FAcked, At: time.Second}, {Kind: checker.FAcked, At: 12 * time.Second},
			{Kind: checker.FLost, At: 31 * time.Second}},
		Violations: []checker.Violation{{Guarantee: "R1", At: 35 * time.Second}},
	}
	rows := Table(got, v)
	want := []struct {
		name            string
		acked, lost, vs int
	}{{"lead-in", 1, 0, 0}, {"1 kill n1 5s", 1, 0, 0}, {"tail", 0, 1, 1}, {"total", 2, 1, 1}}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		r := rows[i]
		if r.Name != w.name || r.Counts[checker.FAcked] != w.acked || r.Counts[checker.FLost] != w.lost || r.Violations != w.vs {
			t.Errorf("row %d: got %s acked %d lost %d violations %d, want %+v", i, r.Name, r.Counts[checker.FAcked], r.Counts[checker.FLost], r.Violations, w)
		}
	}
}

// FuzzParseRecord proves a record read from a file never panics the
// parser, and that one it accepts is judged without a panic.
func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(`{"Seed":1,"Bounds":{"HealWithin":5000000000,"LandWithin":10000000000},"History":{"Members":["a:1","b:1"],` +
		`"Ops":[{"Seq":1,"Node":"a:1","Kind":1,"Timer":5,"Spec":{"Interval":1000000000,"URI":"http://s:9/cb","Opaque":"x"},"Invoke":0,"Return":10,"Outcome":1}],` +
		`"Pops":[{"At":1000000000,"Node":"a:1","Timer":5,"Opaque":"x","Seq":1,"Answered":200}],"End":5000000000}}`))
	f.Add([]byte(`{"History":{"Ops":[{"Spec":{"Interval":1,"RepeatFor":9000000000000000000}}]}}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := ParseRecord(b)
		if err != nil {
			return
		}
		checker.DefaultOptions().JudgeReal(&rec.History, rec.Bounds)
	})
}
