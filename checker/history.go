package checker

import (
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// Kind is the kind of a client operation.
type Kind int

// Client operation kinds.
const (
	Create Kind = iota + 1
	Update
	Delete
)

func (k Kind) String() string {
	switch k {
	case Create:
		return "create"
	case Update:
		return "update"
	case Delete:
		return "delete"
	}
	return "unknown"
}

// Outcome is what the client learned from an operation.
type Outcome int

// Outcomes. Unknown covers timeouts, lost responses and 5xx: the operation
// may or may not have taken effect. Failed is a definite rejection (4xx) that
// changed nothing.
const (
	OK Outcome = iota + 1
	Failed
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Failed:
		return "failed"
	case Unknown:
		return "unknown"
	}
	return "invalid"
}

// Spec is a timer definition as the client sent it, in the history's
// own terms: the fields the checks judge by, without the statistics tags,
// kept apart from wire.Timer so that a history file stays plain JSON.
// RepeatFor is stated, as package wire's convention has it: equal to
// Interval for one pop, never the API's shorthand 0 (SpecOf).
type Spec struct {
	Interval          time.Duration
	RepeatFor         time.Duration
	URI               string
	Opaque            string // unique per create/update in simulated workloads
	ReplicationFactor int
}

// SpecOf is the history's record of a definition a client sends.
func SpecOf(t wire.Timer) Spec {
	t = t.Stated()
	return Spec{Interval: t.Interval, RepeatFor: t.RepeatFor, URI: t.URI, Opaque: t.Opaque, ReplicationFactor: t.ReplicationFactor}
}

// Pops returns how many pops the definition asks for.
func (s Spec) Pops() int {
	return wire.Timer{Interval: s.Interval, RepeatFor: s.RepeatFor}.Pops()
}

// Op is one client operation. Times are true simulated time since the start
// of the run.
type Op struct {
	// Seq numbers the operations of a history in invocation order.
	Seq int
	// Client identifies the simulated client; Node the node it was sent to.
	Client int
	Node   string
	Kind   Kind
	// Timer is the timer's unique ID (the first 16 hex digits of the wire
	// ID): known at invocation for updates and deletes, and after an OK
	// return for creates (0 when a create did not return OK).
	Timer uint64
	// Spec is the definition sent by a create or update.
	Spec    Spec
	Invoke  time.Duration
	Return  time.Duration
	Outcome Outcome
	// Status is the HTTP status, 0 when no response arrived.
	Status int
}

// Pop is one callback delivered to a client endpoint.
type Pop struct {
	At time.Duration
	// Node is the node that sent the callback.
	Node string
	// Timer is the unique ID the pop named (its X-Chronos-Timer header),
	// 0 when it named none.
	Timer  uint64
	URI    string
	Opaque string
	// Seq is the X-Sequence-Number header.
	Seq int
	// Answered is the status the endpoint answered (a slow or failing
	// endpoint still received the pop).
	Answered int
}

// FaultKind names a fault or topology event.
type FaultKind string

// Faults and events the simulator injects.
const (
	Crash         FaultKind = "crash"
	Restart       FaultKind = "restart"
	Pause         FaultKind = "pause"
	Resume        FaultKind = "resume"
	Partition     FaultKind = "partition"
	Heal          FaultKind = "heal"
	Clog          FaultKind = "clog"
	ClockJump     FaultKind = "clock-jump"
	ClockDrift    FaultKind = "clock-drift"
	SlowCallback  FaultKind = "slow-callback"
	FailCallback  FaultKind = "fail-callback"
	CallbackOK    FaultKind = "callback-ok"
	ScaleUp       FaultKind = "scale-up"
	ScaleDown     FaultKind = "scale-down"
	LivenessPhase FaultKind = "liveness-phase"
	// Message faults hit one message on the link Nodes[0] -> Peers[0]:
	// lost, delivered twice, or held back (Detail: how long) so that later
	// messages overtake it. Fault.Timer names the timer the message was
	// about, when its request named one.
	// A message fault whose Detail holds ReplyDetail hit the answer to a
	// request, not the request.
	Lost       FaultKind = "lost"
	Duplicated FaultKind = "duplicated"
	Reordered  FaultKind = "reordered"
	// Late: a request delivered after its sender gave up on it, held by
	// a link that kept it until a heal (Detail "late=<age>"), or a
	// captured request an attacker sent again (Detail "replayed=<age>").
	// Its receiver takes it as a fresh request: a replay changes nothing
	// (docs/design.md 4.13), and a late write of a deleted or replaced
	// definition never brings it back (G5).
	Late FaultKind = "late"
	// Overload: the sender's CPU was overloaded, and the message waited
	// to be written longer than the simulator lets pass unnoticed
	// (Detail: how long until it left, its own write included) or was
	// shed, never sent (Detail: ShedDetail). A burst beyond what a node
	// can send within the backup skew costs duplicates and lateness
	// (docs/design.md section 5), on the timers whose messages waited.
	Overload FaultKind = "overload"
	// Queued: the receiver's CPU was overloaded, and the message (from
	// Nodes[0] to Peers[0]) waited in its inbound queue, after it
	// arrived at At, longer than the simulator lets pass unnoticed
	// (Detail as an Overload's that waited: OverloadWaited, how long,
	// and OverloadRecord when it carried the timer's record). Its
	// receiver processed it that much late: a copy it brought starts
	// late, a notice it carried tells its receiver late that a pop was
	// made, a callback it carried is delivered late.
	Queued FaultKind = "queued"
	// Disk faults, of a history with Storage, on node Nodes[0]: its disk
	// is full (writes fail), or lies (a sync reports success and keeps
	// nothing), until DiskOK; DiskCorrupt flipped a bit of data it had
	// synced (Detail: where); DiskWiped is the restart that found the
	// disk corrupt: the node starts empty, as a node without storage does.
	DiskFull    FaultKind = "disk-full"
	DiskLie     FaultKind = "disk-lie"
	DiskOK      FaultKind = "disk-ok"
	DiskCorrupt FaultKind = "disk-corrupt"
	DiskWiped   FaultKind = "disk-wiped"
)

// ReplyDetail marks, in a message fault's Detail, a fault that hit a
// response: the request itself arrived.
const ReplyDetail = "reply"

// RefusedDatedDetail starts the Detail of a Lost fault that is a request
// its receiver refused as dated outside its age window, which the
// simulator records only when the clocks or the request's age explain it
// ("refused as dated 2.1s ago, clocks 2.1s apart"): the receiver's own
// condition, which refuses every peer's request alike.
const RefusedDatedDetail = "refused as dated"

// RefusedAtLimitDetail starts the Detail of a Lost fault that is a
// record its receiver refused at its limit of timers or bytes (a write's,
// a resync page's), which the simulator records only when what the
// receiver held justifies it (sim/refusal.go): the receiver's own
// condition, which refuses every new record alike.
const RefusedAtLimitDetail = "refused at its limit"

// CallbackDetail marks, in a message fault's Detail, a fault that hit a
// pop's callback request, followed by its sequence number
// ("callback-seq=3").
const CallbackDetail = "callback-seq="

// ShedDetail is the Detail of an Overload fault whose message was shed,
// never sent; OverloadWaited starts that of one whose message waited,
// followed by how long ("waited=120ms"), and OverloadRecord ends it when
// the message carried the timer's record to a node (an internal PUT),
// whose receiver rebuilds the start from it when it processes it; a
// callback's ends with CallbackDetail and the pop it carried
// ("waited=120ms callback-seq=3"), a shed one's too ("shed
// callback-seq=3": that pop's failed attempt, see lostCallback).
const (
	ShedDetail     = "shed"
	OverloadWaited = "waited="
	OverloadRecord = " record"
)

// Fault is one fault or event on the timeline. Nodes lists the nodes it
// touches (for a partition, one side; Peers the other side).
type Fault struct {
	At     time.Duration
	Kind   FaultKind
	Nodes  []string
	Peers  []string
	Detail string
	// Age is, for a request its receiver refused (Lost), how long before
	// At its sender sent it: a receiver may refuse a request long after
	// it was sent, when it was paused, its inbound queue full, or the
	// link held it. 0: unknown (sentAt infers it), or sent at At.
	Age time.Duration
	// Timer is the timer a message fault hit (0: unknown, or not a
	// message fault).
	Timer uint64
	// Until is, for a request its receiver refused for a condition that
	// outlasts the message (Lost: a version dated more than twice
	// MaxClockLead after the receiver's clock, which it refuses by every
	// path until its clock reaches that date less twice the lead), the
	// true time the condition ended: the receiver lacks what the request
	// brought until then, however often it is sent again. 0 (or before
	// At): the refusal was of that one message.
	Until time.Duration
}

// History is everything a run recorded.
type History struct {
	Ops    []Op
	Pops   []Pop
	Faults []Fault
	// Members are the cluster's nodes at the start of the run. The
	// checker places each timer on them with its own reference rendezvous
	// hashing (see Replicas), to tell the faults that touch a timer from
	// those elsewhere; Scales say how the membership changed since.
	Members []string
	// Scales are the membership changes, in order, none overlapping.
	Scales []Scale
	// Held are snapshots of what the nodes held live at the moments G6
	// is checked: when a scale completed, and at the end of the run.
	Held []Held
	// Resyncs are the resyncs that completed while a scale ran, to the
	// scale's view, with what their node held live as each finished:
	// G6 judges that the node took every timer it replicates then
	// (checker/resynced.go).
	Resyncs []Resynced
	// Sites, when the cluster spans several, holds each site's members,
	// the site of the node that took a write first in its placement; the
	// first member of each is the address the other sites forward to.
	Sites [][]string
	// End is the true time the run stopped.
	End time.Duration
	// MaxClockSkew is the largest offset between any node's clock and true
	// time the run injected; early-pop checks allow for it.
	MaxClockSkew time.Duration
	// MaxNetDelay is the largest one-way network delay the run could
	// inject on a healthy link.
	MaxNetDelay time.Duration
	// LivenessFrom is when faults stopped and the cluster healed (0 if the
	// run had no faults).
	LivenessFrom time.Duration
	// Storage is set when the nodes keep their records on disk: a crash
	// then takes no copy away, only a disk fault does (see diskLost).
	Storage bool
	// Epoch is the wall time of the history's 0, as a clock with no
	// offset reads it: where the milliseconds of a timer's ID fall.
	Epoch time.Time
	// Twins names the two members a shared-instance plan configured with
	// one instance number, and TwinInstances the numbers they were given
	// (one per membership they booted in); both nil in any other history.
	Twins         []string
	TwinInstances []int
	// Clashes are the moments a twin surely learned that it shares its
	// number, from what the network handed it (see Clash).
	Clashes []Clash
	// Told are the records of popped definitions the network handed
	// the nodes (see Told), in order.
	Told []Told
}

// Clash is a moment twin Node surely learned that another member shares
// its instance number: Direct, it was handed an internal request from
// its twin, which names the sender's number; otherwise it took the
// answer to an internal request from a node that had been handed one
// from its twin before the request was sent, which names the twin.
type Clash struct {
	At     time.Duration
	Node   string
	Direct bool
}

// Scale is one membership change, carried out by the operator's procedure
// of the original's scaling design: the new configuration (joining or
// leaving nodes) is given to every node, each node's reload starts its
// resync, the operator waits until every staying node's resync has
// finished, and then gives the final configuration and stops the leaving
// nodes.
type Scale struct {
	// Kind is ScaleUp or ScaleDown.
	Kind FaultKind
	// Start is when the scaling configuration was first in force (the
	// joining nodes booted, or the first reload reached a node).
	Start time.Duration
	// End is when the scale completed: every staying node's resync had
	// finished with nothing left out, and the final configuration was
	// given. 0 when it never completed within the run.
	End time.Duration
	// Before and After are the members before and after, in configured
	// order: the nodes the timers are placed on.
	Before, After []string
	// Reloaded is when each member before the scale took the scaling
	// configuration by a reload (a paused one reloads as it resumes); a
	// member down then takes it at its next boot, and has no entry.
	Reloaded map[string]time.Duration
}

// Held is a snapshot of the timers each running node held live (not
// tombstones) at one moment, for G6.
type Held struct {
	At   time.Duration
	Live map[string][]uint64
	// Defs is, per node, the definition of each timer it held live: the
	// opaque of the write that made it (nil when not recorded). G6
	// judges at the end of a run that no node holds live a definition a
	// later write surely replaced (checkVersions).
	Defs map[string]map[uint64]string
}

// Resynced is one resync that completed (it gave up on no peer, failed
// no send and refused no record) while scale Scale (its index in
// History.Scales) ran, to that scale's view: when it finished, on which
// node, and the timers the node held live at that moment.
type Resynced struct {
	At    time.Duration
	Node  string
	Scale int
	Live  []uint64
}

// Violation is one broken guarantee.
type Violation struct {
	// Guarantee is "G1".."G7".
	Guarantee string
	// At is the true time of the offending event.
	At time.Duration
	// Timer is the timer involved, if any.
	Timer uint64
	// Message says what broke, with got and want.
	Message string
}
