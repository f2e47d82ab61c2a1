package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/server/observe"
)

// joinLimit bounds the wait for a join's resyncs: a ceiling against a
// node that hangs, not a timing (a test sets a lower one).
var joinLimit = 30 * time.Minute

// joinResult is what -join measured: how long the new nodes took to
// serve, and then how long from the running nodes' reload until every
// node's resync to the new view had completed, and each node's timers
// and resync figures once it had; the longest resync of a joining node
// by its own clock (its "resync finished" line's took, which GET /status
// gives as started and finished); and the load average of the machine
// when the join started and when it ended.
type joinResult struct {
	serve, resync time.Duration
	joinerTook    time.Duration
	status        []observe.Status
	load          [2]string
}

// join grows the started cluster by o.join nodes once the held timers are
// created (the first step of a scale up, docs/operations.md), and waits
// until every node's resync to the new view has completed, as GET
// /status reports it: a resync completes only once its node's hand-offs
// have, so each old node then holds only what the new ring places on it.
//
// prof, when not nil, is started once the joining nodes serve: the
// profiles then cover the join, not the creates before it.
func join(o options, c *cluster, prof *profiles, log io.Writer) (*joinResult, error) {
	start := time.Now()
	load := loadAverage()
	ctx, cancel := context.WithTimeout(context.Background(), startLimit)
	defer cancel()
	if err := c.Join(ctx, o.join); err != nil {
		return nil, fmt.Errorf("join: %w (logs in %s)", err, c.Dir())
	}
	if prof != nil {
		prof.start()
	}
	res := &joinResult{serve: time.Since(start), load: [2]string{load}}
	reload := time.Now()
	client := &http.Client{Timeout: 5 * time.Second}
	fmt.Fprintf(log, "%d node(s) joined, serving after %v; waiting for every resync ...\n", o.join, res.serve.Round(time.Millisecond))
	addrs, joining := c.Addrs(), c.Addrs()[len(c.Addrs())-o.join:]
	for {
		sts, err := statuses(client, addrs)
		if err == nil {
			done, derr := resynced(sts, joining)
			if derr != nil {
				return nil, fmt.Errorf("join: %w (logs in %s)", derr, c.Dir())
			}
			if done {
				res.resync, res.status = time.Since(reload), sts
				res.joinerTook, res.load[1] = joinerTook(sts[len(sts)-o.join:]), loadAverage()
				return res, nil
			}
		}
		if time.Since(reload) > joinLimit {
			return nil, fmt.Errorf("join: resyncs not completed within %v (last error %v; logs in %s)", joinLimit, err, c.Dir())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// statuses reads GET /status of each node.
func statuses(client *http.Client, addrs []string) ([]observe.Status, error) {
	out := make([]observe.Status, len(addrs))
	for i, a := range addrs {
		resp, err := client.Get("http://" + a + observe.StatusPath)
		if err != nil {
			return nil, err
		}
		err = json.NewDecoder(resp.Body).Decode(&out[i])
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s%s: %w", a, observe.StatusPath, err)
		}
	}
	return out, nil
}

// resynced reports whether every node runs with joining as its joining
// members and its latest resync has completed to its view; a resync that
// gave up on a peer is an error.
func resynced(sts []observe.Status, joining []string) (bool, error) {
	for _, st := range sts {
		if !slices.Equal(st.Joining, joining) || st.Resync.ViewID != st.ViewID {
			return false, nil
		}
		switch st.Resync.State {
		case "incomplete":
			return false, fmt.Errorf("%s's resync gave up on %v", st.Address, st.Resync.FailedPeers)
		case "completed":
		default:
			return false, nil
		}
	}
	return true, nil
}

// joinerTook is the longest of the joining nodes' latest resyncs, each
// by its own clock (its "resync finished" line's took).
func joinerTook(sts []observe.Status) time.Duration {
	var took time.Duration
	for _, st := range sts {
		if r := st.Resync; r.Started != nil && r.Finished != nil {
			took = max(took, r.Finished.Sub(*r.Started))
		}
	}
	return took
}

// loadAverage is the machine's 1-, 5- and 15-minute load averages
// (Linux /proc/loadavg), or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// writeJoin reports the join: its time beside the creates' in the same
// run (the rate the cluster takes timers at from clients), and where the
// timers are once it is done.
func (r *report) writeJoin(w io.Writer) {
	j := r.join
	var held, taken int
	var per []int
	for _, st := range j.status {
		held += st.Timers
		taken += int(st.Resync.Taken)
		per = append(per, st.Timers)
	}
	moved := 0
	for _, st := range j.status[len(j.status)-r.opts.join:] {
		moved += st.Timers
	}
	fmt.Fprintf(w, "join:      %d node(s) joined %d; new nodes served after %v; every resync completed %v after the reload (load average %s at the join, %s at its end)\n",
		r.opts.join, r.nodes, j.serve.Round(time.Millisecond), j.resync.Round(time.Millisecond), j.load[0], j.load[1])
	fmt.Fprintf(w, "resync:    the joining node's took %v (goal 10 s); creating the same %d timers took %v; ratio %.2f\n",
		j.joinerTook.Round(time.Millisecond), r.created, r.createTime.Round(time.Millisecond), ratio(j.joinerTook.Seconds(), r.createTime.Seconds()))
	fmt.Fprintf(w, "moved:     %d timers now on the new nodes, %.0f/s; the creates ran at %.0f/s; ratio %.2f\n",
		moved, rate(moved, j.resync), rate(r.created, r.createTime), ratio(rate(moved, j.resync), rate(r.created, r.createTime)))
	fmt.Fprintf(w, "held:      %d live timers on the nodes %v (want %d: %d created × rf %d); %d taken by resyncs\n",
		held, per, r.created*min(r.opts.rf, len(j.status)), r.created, r.opts.rf, taken)
}
