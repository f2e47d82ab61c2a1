package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
)

// Spec is a timer definition as a client sends it (api.md), validated.
// Durations are milliseconds.
type Spec struct {
	Interval  int64
	RepeatFor int64 // defaulted: equal to Interval when the client gave none
	URI       string
	Opaque    string
	// RF is the requested replication factor, 0 when the client gave none.
	RF   int
	Tags []Tag
	// Tombstone is set for an internal body with an empty callback.
	Tombstone bool
}

// Replication is the internal part of a replication PUT (api.md, "internal
// API"), present only on messages between nodes.
type Replication struct {
	StartTimeDelta int64 // ms: start = receiver's now + delta
	Seq            uint32
	Version        uint64
	ViewID         uint64
	// Definition fingerprints the definition (Timer.def), which a
	// tombstone cannot be fingerprinted by; 0 when absent.
	Definition uint32
	Replicas   []string
	Sites      []string
}

// wireBody is the JSON shape of both the client and the internal body.
// Fields are raw so that types can be checked and reported precisely.
type wireBody struct {
	Timing      *wireTiming      `json:"timing"`
	Callback    *wireCallback    `json:"callback"`
	Reliability *wireReliability `json:"reliability"`
	Statistics  *wireStatistics  `json:"statistics"`
}

type wireTiming struct {
	Interval       json.RawMessage `json:"interval"`
	RepeatFor      json.RawMessage `json:"repeat-for"`
	StartTimeDelta json.RawMessage `json:"start-time-delta"`
	SequenceNumber json.RawMessage `json:"sequence-number"`
	Version        json.RawMessage `json:"version"`
	Definition     json.RawMessage `json:"definition"`
}

type wireCallback map[string]json.RawMessage

type wireHTTP struct {
	URI    *string `json:"uri"`
	Opaque *string `json:"opaque"`
}

type wireReliability struct {
	ReplicationFactor json.RawMessage `json:"replication-factor"`
	ClusterViewID     json.RawMessage `json:"cluster-view-id"`
	Replicas          []string        `json:"replicas"`
	Sites             []string        `json:"sites"`
}

type wireStatistics struct {
	TagInfo []wireTag `json:"tag-info"`
}

type wireTag struct {
	Type  *string         `json:"type"`
	Count json.RawMessage `json:"count"`
}

// BadRequestError is a client error: the reason goes to the client in the
// Reason header and the body of a 400.
type BadRequestError struct{ Reason string }

func (e *BadRequestError) Error() string { return "node: bad request: " + e.Reason }

func badf(format string, args ...any) error {
	return &BadRequestError{Reason: fmt.Sprintf(format, args...)}
}

// ParseBody parses and validates a client or internal timer body. repl is
// nil for a client body (no "replicas" in "reliability").
func ParseBody(body []byte) (spec Spec, repl *Replication, err error) {
	var w wireBody
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&w); err != nil {
		return Spec{}, nil, badf("body is not a valid JSON timer: %v", err)
	}
	if dec.More() {
		return Spec{}, nil, badf("body has data after the JSON object")
	}
	internal := w.Reliability != nil && w.Reliability.Replicas != nil
	if spec, err = parseSpec(&w, internal); err != nil {
		return Spec{}, nil, err
	}
	if internal {
		if repl, err = parseReplication(&w); err != nil {
			return Spec{}, nil, err
		}
	}
	return spec, repl, nil
}

func parseSpec(w *wireBody, internal bool) (Spec, error) {
	var s Spec
	if w.Timing == nil {
		return s, badf("timing is missing")
	}
	if w.Timing.Interval == nil {
		return s, badf("timing.interval is missing")
	}
	interval, err := intField(w.Timing.Interval, "timing.interval", 0, MaxTimingSeconds)
	if err != nil {
		return s, err
	}
	repeatFor := interval
	if w.Timing.RepeatFor != nil {
		r, err := intField(w.Timing.RepeatFor, "timing.repeat-for", 0, MaxTimingSeconds)
		if err != nil {
			return s, err
		}
		if interval == 0 && r != 0 {
			return s, badf("timing.repeat-for must be absent or 0 when timing.interval is 0")
		}
		if r != 0 {
			repeatFor = r
		}
	}
	s.Interval, s.RepeatFor = interval*1000, repeatFor*1000
	if err := parseCallback(w.Callback, internal, &s); err != nil {
		return s, err
	}
	if w.Reliability != nil && w.Reliability.ReplicationFactor != nil {
		rf, err := intField(w.Reliability.ReplicationFactor, "reliability.replication-factor", 1, MaxReplicationFactor)
		if err != nil {
			return s, err
		}
		s.RF = int(rf)
	}
	tags, err := parseTags(w.Statistics)
	if err != nil {
		return s, err
	}
	s.Tags = tags
	return s, nil
}

// parseCallback accepts exactly one "http" callback. An internal body with
// an empty callback is a tombstone (api.md).
func parseCallback(cb *wireCallback, internal bool, s *Spec) error {
	if internal && (cb == nil || len(*cb) == 0) {
		s.Tombstone = true
		return nil
	}
	if cb == nil {
		return badf("callback is missing")
	}
	raw, ok := (*cb)["http"]
	if !ok || len(*cb) != 1 {
		return badf("callback must have exactly one mechanism, \"http\"")
	}
	var h wireHTTP
	if err := json.Unmarshal(raw, &h); err != nil {
		return badf("callback.http is not an object with string uri and opaque: %v", err)
	}
	if h.URI == nil || *h.URI == "" {
		return badf("callback.http.uri is missing")
	}
	u, err := url.Parse(*h.URI)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return badf("callback.http.uri %q is not an absolute http or https URL", *h.URI)
	}
	s.URI = *h.URI
	if h.Opaque != nil {
		s.Opaque = *h.Opaque
	}
	return nil
}

func parseTags(st *wireStatistics) ([]Tag, error) {
	if st == nil || len(st.TagInfo) == 0 {
		return nil, nil
	}
	if len(st.TagInfo) > MaxTags {
		return nil, badf("statistics.tag-info has %d tags, more than %d", len(st.TagInfo), MaxTags)
	}
	tags := make([]Tag, 0, len(st.TagInfo))
	for i, t := range st.TagInfo {
		if t.Type == nil || *t.Type == "" {
			return nil, badf("statistics.tag-info[%d].type is missing", i)
		}
		count := int64(1)
		if t.Count != nil {
			c, err := intField(t.Count, fmt.Sprintf("statistics.tag-info[%d].count", i), 1, 1<<31-1)
			if err != nil {
				return nil, err
			}
			count = c
		}
		tags = append(tags, Tag{Type: *t.Type, Count: int(count)})
	}
	return tags, nil
}

func parseReplication(w *wireBody) (*Replication, error) {
	r := &Replication{Replicas: w.Reliability.Replicas, Sites: w.Reliability.Sites}
	// An empty replica list with sites is a timer forwarded from another
	// site: the receiving node places it on its own cluster.
	if len(r.Replicas) == 0 && len(r.Sites) == 0 || len(r.Replicas) > MaxReplicationFactor {
		return nil, badf("reliability.replicas must list 1 to %d nodes", MaxReplicationFactor)
	}
	var err error
	if w.Timing.StartTimeDelta != nil {
		if r.StartTimeDelta, err = intField(w.Timing.StartTimeDelta, "timing.start-time-delta", -MaxTimingSeconds*1000, MaxTimingSeconds*1000); err != nil {
			return nil, err
		}
	}
	if w.Timing.SequenceNumber != nil {
		seq, err := intField(w.Timing.SequenceNumber, "timing.sequence-number", 0, 1<<31-1)
		if err != nil {
			return nil, err
		}
		r.Seq = uint32(seq)
	}
	if w.Timing.Version != nil {
		if r.Version, err = uintField(w.Timing.Version, "timing.version"); err != nil {
			return nil, err
		}
	}
	if w.Timing.Definition != nil {
		def, err := intField(w.Timing.Definition, "timing.definition", 0, 1<<32-1)
		if err != nil {
			return nil, err
		}
		r.Definition = uint32(def)
	}
	if w.Reliability.ClusterViewID != nil {
		if r.ViewID, err = uintField(w.Reliability.ClusterViewID, "reliability.cluster-view-id"); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// intField parses a JSON integer within [lo, hi]. Strings, fractions,
// exponents and nulls are rejected with the field's name.
func intField(raw json.RawMessage, name string, lo, hi int64) (int64, error) {
	v, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil {
		return 0, badf("%s must be an integer, got %.40s", name, raw)
	}
	if v < lo || v > hi {
		return 0, badf("%s must be between %d and %d, got %d", name, lo, hi, v)
	}
	return v, nil
}

// uintField parses a JSON unsigned 64-bit integer. Versions and view IDs
// are carried as JSON strings of decimal digits too, since JSON numbers
// above 2^53 do not survive every parser.
func uintField(raw json.RawMessage, name string) (uint64, error) {
	s := string(bytes.TrimSpace(raw))
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, badf("%s must be an unsigned integer, got %.40s", name, raw)
	}
	return v, nil
}
