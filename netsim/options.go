// Package netsim is the simulated network of the Chronos simulator: hosts
// that are up, paused or down, per-message latency, loss, duplication and
// reordering, symmetric and one-way partitions, and clogged links. Every
// decision comes from one seeded random stream and every delivery is an event
// on the caller's scheduler, so a run is a pure function of its seed.
//
// The shape follows hashicorp/memberlist's mock transport: a Network is a
// factory that hands each host its own Endpoint, and an Endpoint implements
// node.Network. Messages are node.Request and node.Response values.
//
// Random loss, duplication and reordering apply only to links whose two ends
// were registered as noisy (the links between Chronos nodes). Links to and
// from clients and callback endpoints fail only through the explicit faults
// (partitions, clogs, crashes), which the simulator records in its history,
// so a checker never mistakes background noise for a broken guarantee.
package netsim

import (
	"fmt"
	"time"
)

// Named limits.
const (
	// MaxLatency bounds LatencyMax: a simulated network slower than this
	// is a configuration mistake.
	MaxLatency = 10 * time.Second
	// MaxPausedQueue bounds what a paused host buffers (inbound requests
	// and completions of its own requests) before it drops the oldest.
	MaxPausedQueue = 100_000
	// MaxWorkers bounds a host's modelled parallelism.
	MaxWorkers = 1024
	// MaxServiceTime bounds a modelled per-request cost.
	MaxServiceTime = time.Second
)

// Options holds every knob of the simulated network, each with its unit in
// its name or type. Start from DefaultOptions.
type Options struct {
	// LatencyMin, LatencyMean and LatencyMax shape the one-way delay of a
	// message: LatencyMin plus an exponential with mean LatencyMean -
	// LatencyMin, cut at LatencyMax.
	LatencyMin  time.Duration
	LatencyMean time.Duration
	LatencyMax  time.Duration
	// LossRate is the probability that a message on a noisy link is lost.
	LossRate float64
	// DuplicateRate is the probability that a request on a noisy link is
	// delivered twice (an HTTP-layer retry); only the first reply counts.
	DuplicateRate float64
	// ReorderRate is the probability that a message on a noisy link is
	// held back by up to ReorderDelayMax more, so later ones overtake it.
	ReorderRate     float64
	ReorderDelayMax time.Duration

	// Load: a host's work costs time on a modelled CPU of Workers
	// parallel workers, queued first come first served, so that bursts
	// build queues. With 0 workers work costs nothing (the default).
	//
	// NodeWorkers, NodeServiceTime and NodeSendTime model the Chronos
	// nodes (the noisy hosts): handling an inbound request, and sending
	// a request (a pop, a replication, a notice).
	NodeWorkers     int
	NodeServiceTime time.Duration
	NodeSendTime    time.Duration
	// EndpointWorkers and EndpointServiceTime model the other hosts that
	// serve requests: the clients' callback endpoints.
	EndpointWorkers     int
	EndpointServiceTime time.Duration
}

// DefaultOptions returns a healthy data-centre network: 0.2 ms to 20 ms,
// 1 ms on average, no loss, duplication or reordering.
func DefaultOptions() Options {
	return Options{
		LatencyMin:      200 * time.Microsecond,
		LatencyMean:     time.Millisecond,
		LatencyMax:      20 * time.Millisecond,
		ReorderDelayMax: 50 * time.Millisecond,
	}
}

// Validate reports the first invalid knob, naming it and its value.
func (o Options) Validate() error {
	if o.LatencyMin < 0 {
		return fmt.Errorf("netsim: LatencyMin %v is negative", o.LatencyMin)
	}
	if o.LatencyMean < o.LatencyMin {
		return fmt.Errorf("netsim: LatencyMean %v is below LatencyMin %v", o.LatencyMean, o.LatencyMin)
	}
	if o.LatencyMax < o.LatencyMean || o.LatencyMax > MaxLatency {
		return fmt.Errorf("netsim: LatencyMax %v is not in [LatencyMean %v, %v]", o.LatencyMax, o.LatencyMean, MaxLatency)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"LossRate", o.LossRate}, {"DuplicateRate", o.DuplicateRate}, {"ReorderRate", o.ReorderRate}} {
		if !(p.v >= 0 && p.v <= 1) {
			return fmt.Errorf("netsim: %s %v is not a probability", p.name, p.v)
		}
	}
	if o.ReorderDelayMax < 0 || o.ReorderDelayMax > MaxLatency {
		return fmt.Errorf("netsim: ReorderDelayMax %v is not in [0, %v]", o.ReorderDelayMax, MaxLatency)
	}
	for _, w := range []struct {
		name string
		v    int
	}{{"NodeWorkers", o.NodeWorkers}, {"EndpointWorkers", o.EndpointWorkers}} {
		if w.v < 0 || w.v > MaxWorkers {
			return fmt.Errorf("netsim: %s %d is not in [0, %d]", w.name, w.v, MaxWorkers)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"NodeServiceTime", o.NodeServiceTime}, {"NodeSendTime", o.NodeSendTime}, {"EndpointServiceTime", o.EndpointServiceTime}} {
		if d.v < 0 || d.v > MaxServiceTime {
			return fmt.Errorf("netsim: %s %v is not in [0, %v]", d.name, d.v, MaxServiceTime)
		}
	}
	return nil
}

// MaxDelay is the largest one-way delay a healthy (unclogged) link can
// impose under these options.
func (o Options) MaxDelay() time.Duration {
	d := o.LatencyMax
	if o.ReorderRate > 0 {
		d += o.ReorderDelayMax
	}
	return d
}
