package checker

import (
	"slices"
	"time"
)

// Disks (History.Storage). A node that keeps its records on disk comes
// back from a crash with every copy it acknowledged, so a crash takes a
// copy away only when a disk fault kept it from the disk: a sync that
// lied or a full disk since the node last booted, or a disk found
// corrupt at the restart and wiped. Without storage every crash does.

// diskLostFault marks, in a history with storage, a pop that fell due
// after disk faults may have removed every copy (the storage-on form of
// copiesLostFault).
const diskLostFault FaultKind = "disk-lost"

// crashLoses reports whether crash s may have taken the copies its nodes
// held.
func (x *index) crashLoses(s *span) bool {
	if !x.h.Storage {
		return true
	}
	for _, n := range s.fault.Nodes {
		if x.diskLost(n, s.from, s.end) {
			return true
		}
	}
	return false
}

// diskLost reports whether node n's disk may have lost what it held when
// it crashed at from and restarted at end: a lie or a full disk since its
// boot before from, or a wipe at the restart.
func (x *index) diskLost(n string, from, end time.Duration) bool {
	d := x.diskFaults()[n]
	if d == nil {
		return false // never restarted and no disk fault: nothing lost to its disk
	}
	boot := time.Duration(0)
	for _, at := range d.restarts {
		if at < from {
			boot = max(boot, at)
		}
	}
	return slices.ContainsFunc(d.faulty, func(at time.Duration) bool { return at >= boot && at <= from }) ||
		slices.ContainsFunc(d.wiped, func(at time.Duration) bool { return at >= from && at <= end })
}

// nodeDisk is when a node's disk faults and restarts happened.
type nodeDisk struct {
	// restarts are the node's boots after the first; faulty its lies
	// and full disks; wiped its disks found corrupt and wiped.
	restarts, faulty, wiped []time.Duration
}

// diskFaults is each node's disk history, gathered once: diskLost runs
// for every crash span of every definition, and a history with load
// holds tens of thousands of faults (overload ones), so scanning them
// per call cost a heavy seed minutes.
func (x *index) diskFaults() map[string]*nodeDisk {
	if x.disks != nil {
		return x.disks
	}
	x.disks = map[string]*nodeDisk{}
	for _, f := range x.h.Faults {
		if f.Kind != Restart && f.Kind != DiskLie && f.Kind != DiskFull && f.Kind != DiskWiped {
			continue
		}
		for _, n := range f.Nodes {
			d := x.disks[n]
			if d == nil {
				d = &nodeDisk{}
				x.disks[n] = d
			}
			switch f.Kind {
			case Restart:
				d.restarts = append(d.restarts, f.At)
			case DiskLie, DiskFull:
				d.faulty = append(d.faulty, f.At)
			case DiskWiped:
				d.wiped = append(d.wiped, f.At)
			}
		}
	}
	return x.disks
}

// diskFaulty is the nodes of d whose disk was full or lied somewhere in
// [a, b]: a write they took then may not have reached their disk, and a
// crash takes it (a disk-lost excuse where it matters, see diskLost).
func (x *index) diskFaulty(d *def, a, b time.Duration) []string {
	var out []string
	for s := range d.spans() {
		if (s.fault.Kind == DiskFull || s.fault.Kind == DiskLie) && s.from <= b && s.to >= a {
			out = append(out, s.fault.Nodes...)
		}
	}
	return out
}

// lossFault is the fault that marks a pop due after every copy may have
// been lost: by crashes, or with storage by disk faults.
func (x *index) lossFault() FaultKind {
	if x.h.Storage {
		return diskLostFault
	}
	return copiesLostFault
}

// lossExcuse is the excuse of a pop due after every copy may have been
// lost.
func (x *index) lossExcuse() Excuse { return excuseOf(Fault{Kind: x.lossFault()}) }
