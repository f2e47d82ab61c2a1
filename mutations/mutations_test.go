package mutations

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseSweep(t *testing.T) {
	out := `sweep: 1000/1000 seeds, 2 failed
seed=17 trace=ab events=9 result=FAIL 1 violations mix=crash first=G4@1s:pop 2 delivered twice
seed=3 trace=cd events=9 result=FAIL 1 violations mix=loss first=G2@2s:pop 1 never delivered
sweep: 1000 seeds from 1, 2 failed, 12345 events, 6s
sweep: judged safety phase: 10 due pops, G2 50.0%, G3 50.0%, G4 50.0%
`
	s, err := ParseSweep(out)
	if err != nil {
		t.Fatal(err)
	}
	seed, g, ok := s.First()
	if !ok || seed != 3 || g != "G2" || s.Seeds != 1000 || len(s.Failed) != 2 {
		t.Fatalf("got first seed %d by %s (%v), %d seeds, %d failed; want 3 by G2, 1000 seeds, 2 failed", seed, g, ok, s.Seeds, len(s.Failed))
	}
	clean, err := ParseSweep("sweep: 200 seeds from 1, 0 failed, 5 events, 1s\n")
	if err != nil || len(clean.Failed) != 0 {
		t.Fatalf("clean sweep: got %v, %v; want no failure", clean, err)
	}
	for _, bad := range []string{"", "seed=1 x first=G1@1s\n", "sweep: 10 seeds from 1, 3 failed, 5 events, 1s\n"} {
		if _, err := ParseSweep(bad); err == nil {
			t.Errorf("ParseSweep(%q): got no error, want one", bad)
		}
	}
}

func TestParseHeader(t *testing.T) {
	good := "Mutation: m\nExpect: G1\nBug: b\n\n--- a/x\n+++ b/x\n"
	if m, err := parseHeader([]byte(good)); err != nil || m.Name != "m" || m.Expect != "G1" || m.Bug != "b" {
		t.Fatalf("got %+v, %v", m, err)
	}
	for _, bad := range []string{"Mutation: m\nExpect: G1\n\n--- a/x\n", "Mutation: m\nExpect: G1\nBug: b\n"} {
		if _, err := parseHeader([]byte(bad)); err == nil {
			t.Errorf("parseHeader(%q): got no error, want one", bad)
		}
	}
}

// TestEveryMutationApplies keeps the audit honest between runs: every
// patch must apply to the current tree and still build (a mutation that no
// longer applies would be reported STALE by make mutate). It does not run
// the sweep.
func TestEveryMutationApplies(t *testing.T) {
	ms, err := Load(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 15 {
		t.Fatalf("got %d mutations, want at least 15", len(ms))
	}
	// The bugs the sweep is known to miss, or was not run long enough
	// on, are kept applying too: they are the workload's to-do list.
	for _, sub := range []string{"escaped", "unmeasured"} {
		more, err := Load(sub)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, more...)
	}
	dir := t.TempDir()
	if err := copyTracked(context.Background(), "..", dir); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range ms {
		if names[m.Name] {
			t.Errorf("mutation name %s used twice", m.Name)
		}
		names[m.Name] = true
		patch, _ := filepath.Abs(m.File)
		if out, err := command(context.Background(), dir, "git", "apply", "--check", patch); err != nil {
			t.Errorf("%s no longer applies: %s", m.Name, strings.TrimSpace(string(out)))
		}
		if text := readFile(t, m.File); !strings.Contains(text, "a/node/") && !strings.Contains(text, "a/storage/") {
			t.Errorf("%s patches nothing in node/ or storage/", m.Name)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStages proves the audit tries the seeds a patch records, then the
// first seeds, before the whole sweep, and only when that saves a sweep.
func TestStages(t *testing.T) {
	recorded := Mutation{Caught: []uint64{308, 2000}}
	for _, tc := range []struct {
		m            Mutation
		seeds, first int
		want         []stage
	}{
		{Mutation{}, 1000, 50, []stage{{1, 50}, {1, 1000}}},
		{Mutation{}, 1000, 0, []stage{{1, 1000}}},
		{Mutation{}, 30, 50, []stage{{1, 30}}},
		{Mutation{}, 50, 50, []stage{{1, 50}}},
		// A recorded seed past the sweep is not tried; records are not
		// tried for the full counts.
		{recorded, 1000, 50, []stage{{308, 1}, {1, 50}, {1, 1000}}},
		{recorded, 1000, 0, []stage{{1, 1000}}},
	} {
		if got := stages(tc.m, tc.seeds, tc.first); !slices.Equal(got, tc.want) {
			t.Errorf("stages(%v, %d, %d) = %v, want %v", tc.m.Caught, tc.seeds, tc.first, got, tc.want)
		}
	}
}

// TestSweepCut proves a baseline sweep of many seeds answers for a range
// it holds.
func TestSweepCut(t *testing.T) {
	s := Sweep{Failed: map[uint64]string{17: "G4", 83: "G4", 308: "G5"}, From: 1, Seeds: 1000}
	got := s.cut(1, 50)
	if got.Seeds != 50 || len(got.Failed) != 1 || got.Failed[17] != "G4" {
		t.Fatalf("cut(1, 50) = %+v, want seed 17 of 50", got)
	}
	got = s.cut(308, 1)
	if got.From != 308 || got.Seeds != 1 || len(got.Failed) != 1 || got.Failed[308] != "G5" {
		t.Fatalf("cut(308, 1) = %+v, want seed 308 alone", got)
	}
}

// TestParseCaught proves a patch's Caught line is read, and a bad one
// refused.
func TestParseCaught(t *testing.T) {
	const head = "Mutation: m\nExpect: G5\nBug: b\n"
	const diff = "\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n"
	m, err := parseHeader([]byte(head + "Caught: 308, 873\n" + diff))
	if err != nil || !slices.Equal(m.Caught, []uint64{308, 873}) {
		t.Fatalf("parseHeader: %v, %v; want seeds 308 and 873", m.Caught, err)
	}
	for _, bad := range []string{"Caught: 0\n", "Caught: x\n"} {
		if _, err := parseHeader([]byte(head + bad + diff)); err == nil {
			t.Errorf("parseHeader with %q: no error, want one", bad)
		}
	}
}
