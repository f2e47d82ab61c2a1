package checker

import (
	"fmt"
	"time"
)

// Bounds of docs/design.md section 3, as named constants. Options starts from
// them; a run may widen or narrow them through its own Options.
const (
	// FaultFreeLate is the lateness G3 allows a pop with no fault around it,
	// before network delay and clock skew are added.
	FaultFreeLate = 100 * time.Millisecond
	// ReplicaSkew is how much later each backup rank pops than the one
	// before it (the redundancy path of G3).
	ReplicaSkew = 2 * time.Second
	// NetHops is how many one-way network delays a healthy pop may spend
	// after its due time: the callback itself, plus one more for the
	// replication or popped-notice message that can sit between a start
	// time being fixed and the replica that pops learning of it.
	NetHops = 2
	// CallbackTimeout is how long a replica waits for the callback
	// endpoint's answer from when the request leaves: a 2xx later than
	// that counts as a failed pop (docs/design.md 4.7).
	CallbackTimeout = 2 * time.Second
	// DefaultReplicationFactor is what a create whose Spec has
	// ReplicationFactor 0 gets (api.md: the default replication factor
	// is 2). An update without one keeps its timer's (see writtenRF).
	DefaultReplicationFactor = 2
	// FaultSettle is how long after a fault ends (heal, resume, restart,
	// callback-ok) it still counts as active: the popped notices and
	// resync that clean up after it need a moment.
	FaultSettle = 5 * time.Second
	// LinearizabilitySteps caps the porcupine search of each timer's
	// history, in model steps (see Options.LinearizabilitySteps).
	LinearizabilitySteps = 2_000_000
	// MaxAttributed bounds the checker's memory on one history: the
	// faults attributed to definitions as stored, summed over the
	// definitions (see Options.MaxAttributed). The costliest generated
	// history known stores 0.9 million (fresh seed 8478649: 50,500
	// message faults naming no timer touching most of 2,006 definitions,
	// 91.5 million attributions before they were stored in common);
	// another attributes 6.8 million (7,325 faults touching each of 931
	// definitions, judged in 4 s and 110 MB); the largest of a sample of
	// ordinary seeds, 0.93 million.
	MaxAttributed = 20_000_000
	// TombstoneLife is the least time a replica remembers a finished
	// timer after its last pop was due (node.TombstoneMin).
	TombstoneLife = 10 * time.Second
	// ReportWindow is how far around the first violation the report lists
	// events.
	ReportWindow = 5 * time.Second
	// SiteLag is how long after a write returned another site may still be
	// placing it: the forward to that site's relay and the relay's
	// replication to its replicas, each given up after the node's
	// replication timeout (500 ms).
	SiteLag = time.Second
	// RepopulateBound is how soon after a replica restarted empty it
	// holds its timers again when another replica that kept them stands
	// clear of faults with it: a node starts a repair round with every
	// peer about 1 s after it boots (node's repairAfterReload, drawn
	// from 0.5 to 1 s), besides its start-up resync, and a round is two
	// round trips and a push, each message sent within the 50 ms the
	// simulator lets a wait pass unrecorded, and a page per
	// node.Config.RepairPage records of it (see repopulatedBy).
	RepopulateBound = 3 * time.Second
	// RepairRound is the longest a node waits between two repair rounds
	// (node.DefaultRepairInterval, which its jitter draws from half to
	// whole): a replica a write missed is mended by a round that comes
	// after the write and after the fault that kept it from the replica
	// ended (see placementFault).
	RepairRound = 30 * time.Second
	// RepairTimeout is how long a node waits for the answer to a repair
	// round's message before it asks again (node's repairTimeout).
	RepairTimeout = 5 * time.Second
	// SiteRetry is the longest a write's forward to another site's relay
	// may still be on its way after a cut between them healed: the
	// node's siteRetry sends it again after a wait of at most 8 s, drawn
	// after the try before timed out (ReplicationTimeout), until the
	// relay answers (see heldAtSites).
	SiteRetry = 8*time.Second + ReplicationTimeout
	// ReplicationTimeout is how long a node waits for the answer to a
	// request it sends another node (node.Config's default): a request
	// that waited about as long in its receiver's inbound queue was
	// answered after its sender gave up (see replyLost).
	ReplicationTimeout = 500 * time.Millisecond
)

// Options holds every bound the checks use. The zero value is not useful;
// start from DefaultOptions.
type Options struct {
	// FaultFreeLate is G3's lateness allowance with no fault around.
	FaultFreeLate time.Duration
	// ReplicaSkew is the extra delay per backup rank.
	ReplicaSkew time.Duration
	// NetHops multiplies History.MaxNetDelay in every lateness bound.
	NetHops int
	// DefaultReplicationFactor stands in for a create's Spec's 0.
	DefaultReplicationFactor int
	// FaultSettle extends every fault's active interval past its end.
	FaultSettle time.Duration
	// LivenessGrace is added to the replica-failure bound for pops due
	// after the liveness phase began (G7), for a resync still running.
	LivenessGrace time.Duration
	// StickAllowance is how long after a DELETE or PUT returned a pop of
	// the superseded definition may still fall due (G5). Clock skew and
	// network delay are added to it.
	StickAllowance time.Duration
	// LinearizabilitySteps caps the porcupine search of each timer's
	// history, counted in model steps rather than wall time so that the
	// verdict of a history never depends on the machine that judges it.
	// A timer whose search ran out is undecided: a CHECK violation, never
	// a pass.
	LinearizabilitySteps int
	// MaxAttributed bounds the faults attributed to definitions as the
	// index stores them, summed over the definitions: a fault counts once
	// for every definition that holds it in a list of its own (a crash,
	// a cut, a message naming the timer), and a message fault naming no
	// timer once for every list of such faults that definitions touched
	// alike hold in common (commonSpans: a message refused between two of
	// three nodes touches every timer, and is stored once for all of
	// them). Each costs a pointer. A history past it is not judged: a
	// CHECK violation says so, after seconds and a few hundred MB,
	// instead of the checker taking the machine down. Counted in
	// attributions, not bytes or time, so that a verdict never depends
	// on the machine that judges it. The checks still scan each
	// definition's faults, shared ones included, for each of its pops and
	// writes: a run whose every definition is touched by tens of
	// thousands of messages naming no timer is judged, in a minute
	// (scenarios/README.md U36).
	MaxAttributed int
	// ReportWindow is how far around the first violation the report looks.
	ReportWindow time.Duration
	// TombstoneLife is how long after its last due pop a replica surely
	// still remembers a timer (see checkRetries).
	TombstoneLife time.Duration
	// MaxReportEvents caps the events the text report lists.
	MaxReportEvents int
	// SiteLag is how long after a write returned its forward may still
	// reach another site (see ExSiteLag).
	SiteLag time.Duration
	// RepopulateBound is how soon after its restart a replica that a
	// crash emptied holds its timers again from another replica (see
	// repopulatedBy).
	RepopulateBound time.Duration
	// ReplicationTimeout is how long a node waits for another's answer.
	ReplicationTimeout time.Duration
	// CallbackTimeout is how long a node waits for the callback
	// endpoint's answer (see tookAsMade); 0 takes every callback a slow
	// endpoint answered for a failure.
	CallbackTimeout time.Duration
}

// DefaultOptions returns the bounds of docs/design.md section 3.
func DefaultOptions() Options {
	return Options{
		FaultFreeLate:            FaultFreeLate,
		ReplicaSkew:              ReplicaSkew,
		NetHops:                  NetHops,
		DefaultReplicationFactor: DefaultReplicationFactor,
		FaultSettle:              FaultSettle,
		StickAllowance:           FaultFreeLate,
		LinearizabilitySteps:     LinearizabilitySteps,
		MaxAttributed:            MaxAttributed,
		ReportWindow:             ReportWindow,
		TombstoneLife:            TombstoneLife,
		MaxReportEvents:          200,
		SiteLag:                  SiteLag,
		RepopulateBound:          RepopulateBound,
		ReplicationTimeout:       ReplicationTimeout,
		CallbackTimeout:          CallbackTimeout,
	}
}

// Validate reports the first field that cannot be used.
func (o Options) Validate() error {
	switch {
	case o.FaultFreeLate < 0:
		return fmt.Errorf("checker: FaultFreeLate %v is negative", o.FaultFreeLate)
	case o.ReplicaSkew < 0:
		return fmt.Errorf("checker: ReplicaSkew %v is negative", o.ReplicaSkew)
	case o.NetHops < 0:
		return fmt.Errorf("checker: NetHops %d is negative", o.NetHops)
	case o.DefaultReplicationFactor < 1:
		return fmt.Errorf("checker: DefaultReplicationFactor %d is below 1", o.DefaultReplicationFactor)
	case o.FaultSettle < 0:
		return fmt.Errorf("checker: FaultSettle %v is negative", o.FaultSettle)
	case o.LivenessGrace < 0:
		return fmt.Errorf("checker: LivenessGrace %v is negative", o.LivenessGrace)
	case o.StickAllowance < 0:
		return fmt.Errorf("checker: StickAllowance %v is negative", o.StickAllowance)
	case o.LinearizabilitySteps < 1:
		return fmt.Errorf("checker: LinearizabilitySteps %d is below 1", o.LinearizabilitySteps)
	case o.MaxAttributed < 1:
		return fmt.Errorf("checker: MaxAttributed %d is below 1", o.MaxAttributed)
	case o.ReportWindow < 0:
		return fmt.Errorf("checker: ReportWindow %v is negative", o.ReportWindow)
	case o.TombstoneLife < 0:
		return fmt.Errorf("checker: TombstoneLife %v is negative", o.TombstoneLife)
	case o.SiteLag < 0:
		return fmt.Errorf("checker: SiteLag %v is negative", o.SiteLag)
	case o.RepopulateBound < 0:
		return fmt.Errorf("checker: RepopulateBound %v is negative", o.RepopulateBound)
	case o.ReplicationTimeout < 0:
		return fmt.Errorf("checker: ReplicationTimeout %v is negative", o.ReplicationTimeout)
	case o.CallbackTimeout < 0:
		return fmt.Errorf("checker: CallbackTimeout %v is negative", o.CallbackTimeout)
	case o.MaxReportEvents < 1:
		return fmt.Errorf("checker: MaxReportEvents %d is below 1", o.MaxReportEvents)
	}
	return nil
}

// mustValidate panics on options that would make every check meaningless:
// a programming error of the caller, not an operating failure.
func (o Options) mustValidate() {
	if err := o.Validate(); err != nil {
		panic(err)
	}
}
