package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// PageEntry is one timer of a GET /timers answer (api.md, the resync
// page): its ID, where its replicas were, and its record under the
// requested view, as the internal replication body (start-time-delta
// rather than an absolute start, so that clock skew between the two nodes
// cannot move a pop earlier). Timer is parsed by ParseValid.
type PageEntry struct {
	TimerID     string          `json:"TimerID"`
	OldReplicas []string        `json:"OldReplicas"`
	Timer       json.RawMessage `json:"Timer"`
}

// ParsePage reads a GET /timers answer: the page is validated as JSON
// once (CheckJSON), and its entries' timer bodies are kept in place, for
// ParseValid.
func ParsePage(body []byte) ([]PageEntry, error) {
	if err := CheckJSON(body); err != nil {
		return nil, fmt.Errorf("page is not JSON naming each member once: %w", err)
	}
	top := rawValue(bytes.TrimSpace(body))
	if !top.isObject() {
		return nil, fmt.Errorf("page is not a JSON object")
	}
	var entries []PageEntry
	for it := members(top); it.next(); {
		if string(it.name()) != "timers" {
			continue
		}
		if !it.val.isArray() {
			return nil, fmt.Errorf("timers is not an array")
		}
		entries = make([]PageEntry, 0, count(it.val))
		for el := elements(it.val); el.next(); {
			e, err := parseEntry(el.val)
			if err != nil {
				return nil, err
			}
			entries = append(entries, e)
		}
	}
	if entries == nil {
		return nil, fmt.Errorf("timers is missing")
	}
	return entries, nil
}

func parseEntry(v rawValue) (PageEntry, error) {
	var e PageEntry
	if !v.isObject() {
		return e, fmt.Errorf("a timers entry is not an object")
	}
	for f := members(v); f.next(); {
		var err error
		switch string(f.name()) {
		case "TimerID":
			e.TimerID, err = stringField(f.val, "TimerID")
		case "OldReplicas":
			e.OldReplicas, err = stringList(f.val, "OldReplicas")
		case "Timer":
			e.Timer = json.RawMessage(f.val)
		}
		if err != nil {
			return e, err
		}
	}
	return e, nil
}

// AppendPageEntryHead appends the start of a page entry, up to the
// replication body that follows it; a '}' closes the entry after the
// body. A page writes each record in place this way.
func AppendPageEntryHead(b []byte, id uint64, oldReplicas []string) []byte {
	b = append(b, `{"TimerID":"`...)
	b = append(b, FormatID(id)...)
	b = append(b, `","OldReplicas":`...)
	b = AppendStrings(b, oldReplicas)
	return append(b, `,"Timer":`...)
}
