package observe

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/logtest"
	"github.com/chronos-timer/chronos/server/transport"
)

// manualNow is a wall clock a test moves by hand.
type manualNow struct{ t time.Time }

func (m *manualNow) now() time.Time { return m.t }

// TestPeerReachability proves how a peer's reachability follows the
// outcomes of the requests to it: any answer is reachable, an error
// unreachable, a request shed or cut short by shutdown tells nothing; a
// change is logged at most once per PeerLogInterval, the next line
// counting the changes left untold, and a change left untold is told by
// the first outcome after the interval.
func TestPeerReachability(t *testing.T) {
	logs := &logtest.Buffer{}
	clk := &manualNow{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := NewPeers(slog.New(slog.NewTextHandler(logs, nil)), clk.now)
	p.Track([]string{"127.0.0.2:7253", "127.0.0.3:7253"})
	state := func(addr string) PeerStatus {
		for _, ps := range p.Report() {
			if ps.Address == addr {
				return ps
			}
		}
		t.Fatalf("%s not reported", addr)
		return PeerStatus{}
	}
	lines := func() []string { return regexp.MustCompile(`msg="peer [^\n]*`).FindAllString(logs.String(), -1) }
	refused := errors.New("connection refused")
	const a = "127.0.0.2:7253"

	if ps := state(a); ps.State != ReachUnknown || ps.Since != nil {
		t.Fatalf("before any request: %+v, want unknown", ps)
	}
	p.observe(a, nil)
	p.observe("127.9.9.9:7253", refused) // not tracked: ignored
	p.observe(a, fmt.Errorf("server: %w", transport.ErrShed))
	if ps := state(a); ps.State != ReachReachable || !ps.Since.Equal(clk.t) || len(lines()) != 0 {
		t.Fatalf("after an answer: %+v, lines %q; want reachable since now and no line", ps, lines())
	}
	down := clk.t.Add(time.Second)
	clk.t = down
	p.observe(a, refused)
	if ps := state(a); ps.State != ReachUnreachable || !ps.Since.Equal(down) || ps.LastError != "connection refused" {
		t.Fatalf("after an error: %+v, want unreachable since the error, with it", ps)
	}
	p.observe(a, refused)
	clk.t = clk.t.Add(time.Second)
	p.observe(a, nil)
	p.observe(a, refused)
	clk.t = clk.t.Add(time.Second)
	p.observe(a, nil)
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], `peer=127.0.0.2:7253 err="connection refused" suppressed_changes=0`) {
		t.Fatalf("lines %q, want one telling the peer unreachable", got)
	}
	if ps := state(a); ps.State != ReachReachable || ps.LastError != "connection refused" || ps.LastErrorAt == nil {
		t.Fatalf("back: %+v, want reachable, the last error kept", ps)
	}
	clk.t = down.Add(PeerLogInterval)
	p.observe(a, nil)
	got := lines()
	if len(got) != 2 || !strings.Contains(got[1], `msg="peer reachable again" peer=127.0.0.2:7253 unreachable_for=2s suppressed_changes=2`) {
		t.Fatalf("lines %q, want a second telling the peer back after 2s, 2 changes untold", got)
	}
	p.Track([]string{"127.0.0.3:7253", "127.0.0.4:7253"})
	if r := p.Report(); len(r) != 2 || r[0].Address != "127.0.0.3:7253" || r[1].State != ReachUnknown {
		t.Fatalf("after a reload: %+v, want the two peers listed, the new one unknown", r)
	}
}
