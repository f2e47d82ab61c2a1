package nemesis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/client"
	"github.com/chronos-timer/chronos/wire"
)

// opTimeout bounds one client call, its retries included.
const opTimeout = 45 * time.Second

// Workload shapes the clients' traffic.
type Workload struct {
	// Workers is how many clients write at once; each waits Think on
	// average (exponentially distributed) between its operations.
	Workers int
	Think   time.Duration
}

// DefaultWorkload is about four operations a second.
func DefaultWorkload() Workload { return Workload{Workers: 4, Think: time.Second} }

// opKey carries an operation's Seq to the recording transport.
type opKey struct{}

// recordingTransport records each HTTP request of an operation as an
// attempt: the Go client's retries go to several nodes, and each may
// take effect.
type recordingTransport struct {
	rec  *recorder
	next http.RoundTripper
}

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	seq, ok := req.Context().Value(opKey{}).(int)
	if !ok {
		return t.next.RoundTrip(req)
	}
	a := checker.Attempt{Op: seq, Node: req.URL.Host, Invoke: t.rec.now()}
	resp, err := t.next.RoundTrip(req)
	a.Return = t.rec.now()
	if err == nil {
		a.Status = resp.StatusCode
	}
	t.rec.attempt(a)
	return resp, err
}

// worker is one client of the workload: it creates timers (by PUT to an
// ID it chose, through the Go client, or by POST), updates and deletes
// the timers it created, through nodes in a random order.
type worker struct {
	n      int
	rng    *rand.Rand
	hc     *http.Client
	rec    *recorder
	nodes  []string
	sink   string // the callback URI
	prefix string
	count  int
	live   []liveTimer
}

// liveTimer is a timer the worker created and may still write.
type liveTimer struct {
	id    client.ID
	rf    int           // its replication factor, which an update keeps (a node refuses a change)
	until time.Duration // when its last pop is due, roughly
}

// run writes until ctx ends.
func (w *worker) run(ctx context.Context, think time.Duration) {
	for ctx.Err() == nil {
		w.step(ctx)
		wait := time.Duration(w.rng.ExpFloat64() * float64(think))
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// step makes one operation.
func (w *worker) step(ctx context.Context) {
	now := w.rec.now()
	w.live = dropFinished(w.live, now)
	roll := w.rng.IntN(100)
	switch {
	case len(w.live) == 0 || roll < 30:
		w.create(ctx)
	case roll < 45:
		w.post(ctx)
	case roll < 75:
		w.update(ctx, w.rng.IntN(len(w.live)))
	default:
		w.delete(ctx, w.rng.IntN(len(w.live)))
	}
}

func dropFinished(live []liveTimer, now time.Duration) []liveTimer {
	out := live[:0]
	for _, t := range live {
		if t.until > now {
			out = append(out, t)
		}
	}
	return out
}

// spec draws a timer definition with fresh opaque data.
func (w *worker) spec() client.Timer {
	w.count++
	iv := time.Duration(1+w.rng.IntN(5)) * time.Second
	var repeat time.Duration
	if w.rng.IntN(2) == 0 {
		repeat = iv * time.Duration(2+w.rng.IntN(5))
	}
	rf := 2
	if w.rng.IntN(5) < 2 {
		rf = 3
	}
	return client.Timer{Interval: iv, RepeatFor: repeat, URI: w.sink, ReplicationFactor: rf,
		Opaque: fmt.Sprintf("%s-w%d-%d", w.prefix, w.n, w.count)}
}

// client is a Go client of the nodes in a random order, so that each
// call starts at a random node and fails over to the others.
func (w *worker) client() *client.Client {
	order := append([]string(nil), w.nodes...)
	w.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	c, err := client.New(order, client.WithHTTPClient(w.hc))
	if err != nil {
		panic(fmt.Sprintf("nemesis: client of %v: %v", order, err)) // the nodes are ours
	}
	return c
}

// until is roughly when a definition written now pops for the last time.
func (w *worker) until(t client.Timer) time.Duration {
	return w.rec.now() + max(t.RepeatFor, t.Interval)
}

func (w *worker) create(ctx context.Context) {
	c, t := w.client(), w.spec()
	seq := w.rec.invoke(checker.Op{Client: w.n, Node: c.Nodes()[0], Kind: checker.Create, Spec: checker.SpecOf(t)})
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, opKey{}, seq), opTimeout)
	defer cancel()
	id, err := c.Create(ctx, t)
	w.done(seq, id, err)
	if id != "" {
		w.live = append(w.live, liveTimer{id: id, rf: t.ReplicationFactor, until: w.until(t)})
	}
}

func (w *worker) update(ctx context.Context, i int) {
	c, t := w.client(), w.spec()
	t.ReplicationFactor = w.live[i].rf
	seq := w.rec.invoke(checker.Op{Client: w.n, Node: c.Nodes()[0], Kind: checker.Update, Timer: unique(w.live[i].id), Spec: checker.SpecOf(t)})
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, opKey{}, seq), opTimeout)
	defer cancel()
	id, err := c.Update(ctx, w.live[i].id, t)
	w.done(seq, "", err)
	if err == nil {
		w.live[i] = liveTimer{id: id, rf: t.ReplicationFactor, until: w.until(t)}
	} else {
		w.live[i].until = max(w.live[i].until, w.until(t))
	}
}

func (w *worker) delete(ctx context.Context, i int) {
	c := w.client()
	seq := w.rec.invoke(checker.Op{Client: w.n, Node: c.Nodes()[0], Kind: checker.Delete, Timer: unique(w.live[i].id)})
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, opKey{}, seq), opTimeout)
	defer cancel()
	err := c.Delete(ctx, w.live[i].id)
	w.done(seq, "", err)
	w.live = append(w.live[:i], w.live[i+1:]...)
}

// post creates a timer with one POST /timers to a random node, as a
// client without the Go client would: it is not retried, since a
// retried POST may create a second timer.
func (w *worker) post(ctx context.Context) {
	addr, t := w.nodes[w.rng.IntN(len(w.nodes))], w.spec()
	body, err := t.MarshalJSON()
	if err != nil {
		panic(fmt.Sprintf("nemesis: encode %+v: %v", t, err)) // the workload's own definitions
	}
	seq := w.rec.invoke(checker.Op{Client: w.n, Node: addr, Kind: checker.Create, Spec: checker.SpecOf(t)})
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, opKey{}, seq), client.DefaultAttemptTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/timers", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.hc.Do(req)
	var id client.ID
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			id, _ = client.ParseID(strings.TrimPrefix(resp.Header.Get("Location"), "/timers/"))
		}
		if err = statusErr(resp.StatusCode); err == nil && id == "" {
			err = fmt.Errorf("POST /timers: 200 without a timer ID in Location %q", resp.Header.Get("Location"))
		}
	}
	w.done(seq, id, err)
	if id != "" && err == nil {
		w.live = append(w.live, liveTimer{id: id, rf: t.ReplicationFactor, until: w.until(t)})
	}
}

// statusErr is the outcome of a plain request's status, as the Go client
// reports it.
func statusErr(status int) error {
	if status == http.StatusOK {
		return nil
	}
	return &client.StatusError{Status: status}
}

// done records how operation seq ended: 2xx is OK, a 4xx other than 408
// and 429 a refusal that changed nothing, anything else (503, no answer,
// every node failed) unknown. id, when known, names the timer.
func (w *worker) done(seq int, id client.ID, err error) {
	last, answered := w.rec.lastAttempt(seq)
	w.rec.complete(seq, func(op *checker.Op) {
		if id != "" && op.Timer == 0 {
			op.Timer = unique(id)
		}
		var st *client.StatusError
		switch {
		case err == nil:
			op.Outcome, op.Status = checker.OK, http.StatusOK
		case errors.As(err, &st) && st.Status >= 400 && st.Status < 500 && st.Status != 408 && st.Status != 429:
			op.Outcome, op.Status = checker.Failed, st.Status
		default:
			op.Outcome = checker.Unknown
			if errors.As(err, &st) {
				op.Status = st.Status
			}
		}
		if answered {
			op.Node = last.Node
		}
	})
}

// unique is the timer's unique ID, as pops name it.
func unique(id client.ID) uint64 {
	u, err := wire.ParseID(id.Unique())
	if err != nil {
		panic(fmt.Sprintf("nemesis: timer ID %q from the client: %v", id, err))
	}
	return u
}
