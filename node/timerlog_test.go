package node

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// TestLogsFollowATimer proves that at debug level every step of a timer's
// life is one line naming it by the ID the API gave (timer=, its wire
// ID) and the node that took the step, so that grep of that ID across a
// cluster's logs tells its story: the create and the delete through the
// proxy, the replications and their answers, each replica's apply, the
// pops, their callbacks and notices. At info level none is written.
func TestLogsFollowATimer(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var logs bytes.Buffer
		c := newClusterWith(t, func(a string, cfg *Config) {
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level})).With("node", a)
		}, three...)
		r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":5,"repeat-for":10},"callback":{"http":{"uri":"`+cb+
			`","opaque":"x"}},"reliability":{"replication-factor":3}}`)
		wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
		c.advance(6*time.Second, 200)
		if r := c.client(three[1], "DELETE", "/timers/"+wid, ""); r.Status != 200 {
			t.Fatalf("DELETE: status %d, want 200", r.Status)
		}
		steps := map[string][]string{} // step: the nodes that logged it
		for _, line := range strings.Split(logs.String(), "\n") {
			if !strings.Contains(line, "timer="+wid[:16]) {
				continue
			}
			msg, node := field(line, "msg="), field(line, "node=")
			steps[msg] = append(steps[msg], node)
		}
		if level == slog.LevelInfo {
			if len(steps) > 0 {
				t.Errorf("at info level the timer's steps were logged: %v", steps)
			}
			continue
		}
		for _, want := range []struct {
			step  string
			nodes int // at least
		}{{"timer create", 1}, {"timer replicated", 2}, {"timer apply", 3}, {"timer pop", 1}, {"timer callback", 1},
			{"timer notice", 1}, {"timer delete", 1}} {
			if got := distinct(steps[`"`+want.step+`"`]); got < want.nodes {
				t.Errorf("%q logged by %d nodes %v, want at least %d; steps logged: %v", want.step, got, steps[`"`+want.step+`"`], want.nodes, steps)
			}
		}
		if !strings.Contains(logs.String(), "timer="+wid+" ") {
			t.Errorf("no line names the timer by its whole ID %s, as the API shows it", wid)
		}
	}
}

// field returns the value of key= in a text-handler line, quotes kept.
func field(line, key string) string {
	_, rest, ok := strings.Cut(line, " "+key)
	if !ok {
		return ""
	}
	if strings.HasPrefix(rest, `"`) {
		end := strings.Index(rest[1:], `"`)
		return rest[:end+2]
	}
	v, _, _ := strings.Cut(rest, " ")
	return v
}

// distinct counts the distinct strings of s.
func distinct(s []string) int {
	seen := map[string]bool{}
	for _, v := range s {
		seen[v] = true
	}
	return len(seen)
}
