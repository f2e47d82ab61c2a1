package wire

import (
	"encoding/json"
	"testing"
	"time"
)

// benchClientBody is a client create with every public section, tags
// included: the body the create path parses at the rate docs/design.md section 5
// asks for.
var benchClientBody = []byte(`{"timing":{"interval":30,"repeat-for":300},` +
	`"callback":{"http":{"uri":"http://client.example:8080/callbacks/timer","opaque":"call-id=4fe3a2; leg=2"}},` +
	`"reliability":{"replication-factor":2},` +
	`"statistics":{"tag-info":[{"type":"CALL","count":1},{"type":"SUBSCRIPTION","count":2}]}}`)

// benchInternalBody is a replication PUT as AppendReplication writes it.
var benchInternalBody = AppendReplication(nil, &Timer{
	Interval: 30 * time.Second, RepeatFor: 300 * time.Second, ReplicationFactor: 2,
	URI: "http://client.example:8080/callbacks/timer", Opaque: "call-id=4fe3a2; leg=2",
	Tags: []Tag{{Type: "CALL", Count: 1}, {Type: "SUBSCRIPTION", Count: 2}},
}, &Replication{
	StartTimeDelta: -500 * time.Millisecond, Seq: 4, Version: 1<<60 + 3, ViewID: 1<<40 + 9,
	Replicas: []string{"10.0.0.1:7253", "10.0.0.2:7253"}, Sites: []string{"site-a", "site-b"},
})

// benchPlainBody is the shape a plain encoding/json decode fills, with no
// validation: the baseline Parse is compared with in the same run.
type benchPlainBody struct {
	Timing struct {
		Interval       int64  `json:"interval"`
		RepeatFor      int64  `json:"repeat-for"`
		StartTimeDelta int64  `json:"start-time-delta"`
		SequenceNumber uint32 `json:"sequence-number"`
		Version        string `json:"version"`
	} `json:"timing"`
	Callback struct {
		HTTP *struct {
			URI    string `json:"uri"`
			Opaque string `json:"opaque"`
		} `json:"http"`
	} `json:"callback"`
	Reliability struct {
		ReplicationFactor int      `json:"replication-factor"`
		ClusterViewID     string   `json:"cluster-view-id"`
		Replicas          []string `json:"replicas"`
		Sites             []string `json:"sites"`
	} `json:"reliability"`
	Statistics struct {
		TagInfo []Tag `json:"tag-info"`
	} `json:"statistics"`
}

// BenchmarkParseBody measures parsing and validating a client body and an
// internal body, each beside a plain encoding/json decode of the same bytes
// into tagged structs (baseline=unmarshal), so the ratio of the two is
// comparable across machines:
//
//	go test -run '^$' -bench ParseBody -benchmem ./wire
func BenchmarkParseBody(b *testing.B) {
	bodies := []struct {
		name string
		body []byte
	}{
		{"client", benchClientBody},
		{"internal", benchInternalBody},
	}
	for _, bb := range bodies {
		b.Run(bb.name, func(b *testing.B) {
			b.SetBytes(int64(len(bb.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Parse(bb.body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bb.name+"/baseline=unmarshal", func(b *testing.B) {
			b.SetBytes(int64(len(bb.body)))
			b.ReportAllocs()
			for b.Loop() {
				var w benchPlainBody
				if err := json.Unmarshal(bb.body, &w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
