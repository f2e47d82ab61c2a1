package node

import (
	"fmt"
	"slices"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// A held record (Timer) and the bodies of package wire meet here: the
// definition a record holds, and the replication body it travels as.

// definition is the client definition a record holds; no URI for a
// tombstone.
func definition(t *Timer) wire.Timer {
	d := wire.Timer{
		Interval:          t.Interval(),
		RepeatFor:         t.RepeatFor(),
		ReplicationFactor: int(t.RF),
		Tags:              t.Tags(),
	}
	if t.State != Tombstone {
		d.URI, d.Opaque = t.CallbackURI(), t.Opaque()
	}
	return d
}

// deletes reports whether a definition is a deletion: a client's delete,
// or a tombstone received (wire's Timer with no URI).
func deletes(d wire.Timer) bool { return d.URI == "" }

// EncodeReplication returns the internal PUT body for t as of now (ms).
// A Moved record travels as the live definition it is, placed on other
// nodes: a receiver among its replicas takes it live, any other keeps it
// as Moved. Sent as a tombstone, it would delete the timer wherever it
// met the same definition live (a 409 answer to a pop notice did;
// TestScaleDownWorkedExample).
func EncodeReplication(t *Timer, now int64) []byte {
	size := 320 + len(t.cb)
	if t.host() != nil {
		size += len(*t.host())
	}
	return AppendReplication(make([]byte, 0, size), t, now)
}

// AppendReplication appends EncodeReplication(t, now) to b, so that a
// resync page writes each record in place.
func AppendReplication(b []byte, t *Timer, now int64) []byte {
	return appendReplication(b, t, now, false)
}

// encodeSitesLacking is EncodeReplication of t, a tombstone, naming the
// other sites t's SitesLacking marks (reliability.sites-lacking): only
// the word a node sends its site's replicas once its forward of the
// tombstone failed (tellSitesLacking). Every other message leaves the
// mark out: set when a write's forward leaves, it means nothing yet.
func encodeSitesLacking(t *Timer, now int64) []byte {
	return appendReplication(make([]byte, 0, 320), t, now, true)
}

func appendReplication(b []byte, t *Timer, now int64, sitesLacking bool) []byte {
	// A Moved copy's marks are the pops it owes (entombAs): missed, and
	// not attempted here.
	missed, _ := t.popMarks()
	d := definition(t)
	r := wire.Replication{
		StartTimeDelta: time.Duration(t.Start-now) * time.Millisecond,
		Seq:            t.Seq,
		Version:        t.Version,
		ViewID:         t.ViewID(),
		Definition:     t.def,
		Missed:         missed,
		Replicas:       t.Placement().Replicas,
		Sites:          t.Placement().Sites,
	}
	if first := t.firstTry(); first != t.Version {
		r.FirstTry = first
	}
	var lacking [wire.MaxReplicationFactor]string
	if (t.State == Live || t.State == Tombstone) && t.Extra() != nil && t.Extra().Lacking != 0 {
		r.Lacking = appendMarked(lacking[:0], t.Placement().Replicas, t.Extra().Lacking)
	}
	if sitesLacking && t.State == Tombstone {
		r.SitesLacking = appendMarked(nil, t.Placement().Sites, t.sitesLacking())
	}
	return wire.AppendReplication(b, &d, &r)
}

// appendMarked appends to out the replicas whose bit mask marks (by
// position, as TimerExtra's masks do).
func appendMarked(out, replicas []string, mask uint32) []string {
	for i, r := range replicas {
		if i < 32 && mask&(1<<i) != 0 {
			out = append(out, r)
		}
	}
	return out
}

// markOf is the mask, by position in replicas, of the nodes names lists;
// names outside replicas, and skip, are left out.
func markOf(replicas, names []string, skip string) uint32 {
	var mask uint32
	for i, r := range replicas {
		if i < 32 && r != skip && slices.Contains(names, r) {
			mask |= 1 << i
		}
	}
	return mask
}

// startOf is the start, on this node's clock, that a replication body's
// start-time-delta gives: added to this node's time as it takes the body,
// whatever path brought it (replication, notice, repair push, resync
// page, answer) and however old the message is. Transit only makes the
// start later, never earlier, whatever the clocks of the sender and the
// receiver say; a start corrected by the message's age on the two clocks
// (X-Chronos-Sent) would be early by however far the receiver's clock ran
// ahead of the sender's beyond MaxClockSkew (docs/design.md 4.13;
// mutation 96).
func (n *Node) startOf(r *wire.Replication) int64 {
	return n.startMs() + r.StartTimeDelta.Milliseconds()
}

// badf returns a client error: wire's, so that every 400 a node answers
// is one type (errorResponse).
func badf(format string, args ...any) error {
	return &wire.BadRequestError{Reason: fmt.Sprintf(format, args...)}
}
