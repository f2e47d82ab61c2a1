package observe

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/transport"
)

// Reachability of a peer, as GET /status shows it.
const (
	ReachUnknown     = "unknown"     // no request to it has ended yet
	ReachReachable   = "reachable"   // its latest request was answered, whatever the status
	ReachUnreachable = "unreachable" // its latest request had no answer
)

// PeerLogInterval is the least time between two log lines about one
// peer's reachability: a peer that comes and goes would otherwise write a
// line per change.
const PeerLogInterval = 10 * time.Second

// PeerStatus is one peer's reachability in GET /status.
type PeerStatus struct {
	Address string `json:"address"`
	State   string `json:"state"`
	// Since is when the peer entered State (absent while unknown).
	Since *time.Time `json:"since,omitempty"`
	// LastError is the error of the latest request that had no answer,
	// and LastErrorAt when it ended.
	LastError   string     `json:"last-error,omitempty"`
	LastErrorAt *time.Time `json:"last-error-at,omitempty"`
}

// peerReach is what is known of one peer.
type peerReach struct {
	state              string
	since, lastErrorAt time.Time
	lastError          string
	// logged is the state the last log line told, at loggedAt, which
	// the peer had entered at loggedSince; suppressed counts the changes
	// not told since.
	logged                string
	loggedAt, loggedSince time.Time
	suppressed            int
}

// Peers tracks the reachability of the cluster's other members and the
// remote sites from the outcomes of the node's requests to them (Watch),
// and logs when one becomes unreachable and when it is back.
type Peers struct {
	log   *slog.Logger
	now   func() time.Time
	every time.Duration

	mu    sync.Mutex
	order []string
	byURL map[string]*peerReach
}

// NewPeers returns a Peers that tracks none yet, logging to log and
// reading the time from now.
func NewPeers(log *slog.Logger, now func() time.Time) *Peers {
	return &Peers{log: log, now: now, every: PeerLogInterval, byURL: map[string]*peerReach{}}
}

// Track sets the peers to follow: those still listed keep what is known
// of them, new ones start unknown, the others are forgotten. Only these
// are followed, so the table is as bounded as the configuration.
func (p *Peers) Track(addrs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := make(map[string]*peerReach, len(addrs))
	p.order = p.order[:0]
	for _, a := range addrs {
		if _, dup := next[a]; dup {
			continue
		}
		r := p.byURL[a]
		if r == nil {
			r = &peerReach{state: ReachUnknown, logged: ReachReachable}
		}
		next[a] = r
		p.order = append(p.order, a)
	}
	p.byURL = next
}

// observe takes the outcome of a request to addr: any answer makes it
// reachable; an error unreachable, unless the request never left this
// node (shed under load, or the client closed).
func (p *Peers) observe(addr string, err error) {
	if errors.Is(err, transport.ErrShed) || errors.Is(err, transport.ErrClientClosed) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.byURL[addr]
	if r == nil {
		return
	}
	now := p.now()
	state := ReachReachable
	if err != nil {
		state = ReachUnreachable
		r.lastError, r.lastErrorAt = err.Error(), now
	}
	if state != r.state {
		if r.state != ReachUnknown {
			r.suppressed++
		}
		r.state, r.since = state, now
	}
	if r.state == r.logged || !r.loggedAt.IsZero() && now.Sub(r.loggedAt) < p.every {
		return
	}
	p.logChange(addr, r, now)
}

// logChange logs r's change to its current state; p.mu is held.
func (p *Peers) logChange(addr string, r *peerReach, now time.Time) {
	// The change being told is not one suppressed.
	suppressed := max(r.suppressed-1, 0)
	if r.state == ReachUnreachable {
		p.log.Warn("peer unreachable", "peer", addr, "err", r.lastError, "suppressed_changes", suppressed)
	} else {
		p.log.Info("peer reachable again", "peer", addr, "unreachable_for", r.since.Sub(r.loggedSince), "suppressed_changes", suppressed)
	}
	r.logged, r.loggedAt, r.loggedSince, r.suppressed = r.state, now, r.since, 0
}

// Report returns every tracked peer's reachability, in the order given.
func (p *Peers) Report() []PeerStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PeerStatus, 0, len(p.order))
	for _, a := range p.order {
		r := p.byURL[a]
		ps := PeerStatus{Address: a, State: r.state, LastError: r.lastError}
		if r.state != ReachUnknown {
			ps.Since = timePtr(r.since)
		}
		if !r.lastErrorAt.IsZero() {
			ps.LastErrorAt = timePtr(r.lastErrorAt)
		}
		out = append(out, ps)
	}
	return out
}

func timePtr(t time.Time) *time.Time { return &t }

// Watch returns the node's network next, with the outcome of every
// request to a peer (anything but a callback) taken by p on its way back
// to the node.
func (p *Peers) Watch(next node.Network) node.Network { return observed{next, p} }

// observed is a network whose requests to peers Peers watches.
type observed struct {
	next  node.Network
	peers *Peers
}

var _ node.Network = observed{}

func (o observed) Send(req node.Request, timeout time.Duration, done func(node.Response, error)) {
	if transport.IsCallback(req) {
		o.next.Send(req, timeout, done)
		return
	}
	addr := peerOf(req.URL)
	o.next.Send(req, timeout, func(resp node.Response, err error) {
		o.peers.observe(addr, err)
		done(resp, err)
	})
}

// peerOf is the host:port of an internal request's URL, as the node
// builds it from a peer's address ("http://<address>/timers/...").
func peerOf(rawURL string) string {
	_, rest, _ := strings.Cut(rawURL, "://")
	host, _, _ := strings.Cut(rest, "/")
	host, _, _ = strings.Cut(host, "?")
	return host
}
