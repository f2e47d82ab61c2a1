package wire

import (
	"slices"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParsePage proves the resync page parser, which reads a peer's
// answer, never panics, and that what it accepts holds only valid UTF-8
// and round-trips: each entry written back with AppendPageEntryHead
// parses to the same entry.
func FuzzParsePage(f *testing.F) {
	body := AppendReplication(nil, &Timer{Interval: time.Second, RepeatFor: time.Minute, URI: "http://h/cb", Opaque: "o"},
		&Replication{Version: 3, ViewID: 2, Replicas: []string{"a:1", "b:2"}})
	page := append(AppendPageEntryHead([]byte(`{"timers":[`), 7, []string{"a:1"}), body...)
	f.Add(append(page, "}]}"...))
	f.Add([]byte(`{"timers":[]}`))
	f.Add([]byte(`{"timers":[{"TimerID":"\ud800"}]}`))
	f.Add([]byte(`{"timers":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := ParsePage(b)
		if err != nil {
			return
		}
		for _, e := range entries {
			if !utf8.ValidString(e.TimerID) {
				t.Fatalf("accepted invalid UTF-8 in %+v", e)
			}
			for _, r := range e.OldReplicas {
				if !utf8.ValidString(r) {
					t.Fatalf("accepted invalid UTF-8 replica %q", r)
				}
			}
			id, err := ParseID(e.TimerID)
			if err != nil || e.Timer == nil {
				continue
			}
			again := append(AppendPageEntryHead([]byte(`{"timers":[`), id, e.OldReplicas), e.Timer...)
			back, err := ParsePage(append(again, "}]}"...))
			if err != nil || len(back) != 1 || !slices.Equal(back[0].OldReplicas, e.OldReplicas) ||
				string(back[0].Timer) != string(e.Timer) {
				t.Fatalf("entry %+v written back: got %+v, %v", e, back, err)
			}
		}
	})
}
