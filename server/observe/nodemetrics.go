package observe

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-timer/chronos/node"
)

// nodeMetric is one of the node's own figures, read from its counters and
// its latest resync; labels, if any, are constant.
type nodeMetric struct {
	name, help string
	kind       prometheus.ValueType
	value      func(node.Stats, node.ResyncStatus) float64
	labels     prometheus.Labels
}

// Help texts shared by the series of one metric.
const (
	shedHelp    = "Requests the node refused with 503 at a limit: limit=\"timers\" (it holds its most timers; client writes and replicas), limit=\"bytes\" (its byte budget of held timers), limit=\"in_flight\" (its most outbound requests outstanding)."
	refusedHelp = "Internal requests refused with 403: reason=\"signature\" (no valid signature under the cluster key, or without a key not from a member's address), reason=\"destination\" (addressed to another member), reason=\"age\" (sent longer ago than max_message_age plus max_clock_skew, or dated more than max_clock_skew ahead), reason=\"certificate\" (no client certificate the cluster's CA signed, with mutual TLS)."
)

// nodeMetrics are the node's own figures on /metrics (docs/metrics.md).
var nodeMetrics = []nodeMetric{
	{name: "chronos_timers", help: "Live timers this node holds.", kind: prometheus.GaugeValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.Timers) }},
	{name: "chronos_tombstones", help: "Tombstones (deleted or finished timers) this node still keeps.", kind: prometheus.GaugeValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.Tombstones) }},
	{name: "chronos_pops_total", help: "Callbacks sent.", kind: prometheus.CounterValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.Pops) }},
	{name: "chronos_callback_failures_total", help: "Callbacks that failed: no answer, or an answer other than 2xx.", kind: prometheus.CounterValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.CallbackFailures) }},
	{name: "chronos_replications_sent_total", help: "Replication messages (internal PUTs to replicas and to other sites) sent.", kind: prometheus.CounterValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.ReplicationsSent) }},
	{name: "chronos_replications_failed_total", help: "Replication messages that had no answer: an error, a timeout, or shed.", kind: prometheus.CounterValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.ReplicationsFailed) }},
	{name: "chronos_replications_refused_total", help: "Replication messages the peer answered with a status other than 2xx (409, 403, 503).", kind: prometheus.CounterValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.ReplicationsRefused) }},
	{name: "chronos_replications_received_total", help: "Replication messages received.", kind: prometheus.CounterValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.ReplicationsReceived) }},
	{name: "chronos_shed_total", help: shedHelp, kind: prometheus.CounterValue, labels: prometheus.Labels{"limit": "timers"},
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.ShedTimers) }},
	{name: "chronos_shed_total", help: shedHelp, kind: prometheus.CounterValue, labels: prometheus.Labels{"limit": "bytes"},
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.ShedBytes) }},
	{name: "chronos_timer_bytes", help: "What the held records count against the byte budget ([limits] max_timer_bytes): callback URIs and opaque data, and 200 bytes each.", kind: prometheus.GaugeValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.HeldBytes) }},
	{name: "chronos_internal_refused_total", help: refusedHelp, kind: prometheus.CounterValue, labels: prometheus.Labels{"reason": "signature"},
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.Forbidden) }},
	{name: "chronos_internal_refused_total", help: refusedHelp, kind: prometheus.CounterValue, labels: prometheus.Labels{"reason": "destination"},
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.Misaddressed) }},
	{name: "chronos_internal_refused_total", help: refusedHelp, kind: prometheus.CounterValue, labels: prometheus.Labels{"reason": "age"},
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.Stale) }},
	{name: "chronos_callbacks_refused_total", help: "Timers refused because the callback policy forbids their callback (the allow-list, link-local, unspecified or own addresses), whether a client, a replica, a resync page or a repair brought them.", kind: prometheus.CounterValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.CallbacksRefused) }},
	{name: "chronos_writes_expired_total", help: "Client writes refused with 408 because their X-Chronos-Deadline had passed.", kind: prometheus.CounterValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.DeadlinePassed) }},
	{name: "chronos_shed_total", help: shedHelp, kind: prometheus.CounterValue, labels: prometheus.Labels{"limit": "in_flight"},
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.ShedInFlight) }},
	{name: "chronos_statistics_tags", help: "Distinct statistics tags the live timers held carry.", kind: prometheus.GaugeValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(len(st.Tags)) }},
	{name: "chronos_resync_running", help: "1 while a resync runs on this node.", kind: prometheus.GaugeValue,
		value: func(_ node.Stats, r node.ResyncStatus) float64 { return b2f(r.Running) }},
	{name: "chronos_resync_peers_pending", help: "Peers the running resync has not finished with (0 when none runs).", kind: prometheus.GaugeValue,
		value: func(_ node.Stats, r node.ResyncStatus) float64 {
			if !r.Running {
				return 0
			}
			return float64(r.Peers - r.PeersDone - len(r.Failed))
		}},
	{name: "chronos_resync_failed_peers", help: "Peers the latest resync gave up on.", kind: prometheus.GaugeValue,
		value: func(_ node.Stats, r node.ResyncStatus) float64 { return float64(len(r.Failed)) }},
	{name: "chronos_resyncs_completed_total", help: "Resyncs that reached every peer.", kind: prometheus.CounterValue,
		value: func(_ node.Stats, r node.ResyncStatus) float64 { return float64(r.Completed) }},
	{name: "chronos_resyncs_incomplete_total", help: "Resyncs that gave up on a peer.", kind: prometheus.CounterValue,
		value: func(_ node.Stats, r node.ResyncStatus) float64 { return float64(r.Incomplete) }},
	{name: "chronos_resync_timers_taken", help: "Timers the latest resync took.", kind: prometheus.GaugeValue,
		value: func(_ node.Stats, r node.ResyncStatus) float64 { return float64(r.Taken) }},
	{name: "chronos_resync_pages_served_total", help: "GET /timers pages this node answered.", kind: prometheus.CounterValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.ResyncPagesServed) }},
	{name: "chronos_repair_collisions_skipped_total", help: "Records a repair round did not send a peer again, or ask a peer for again, because the two refused each other's record of the timer as a collision (two timers under one ID) and neither record changed since.", kind: prometheus.CounterValue,
		value: func(st node.Stats, _ node.ResyncStatus) float64 { return float64(st.RepairCollisionsSkipped) }},
}

// Bounds of the chronos_tagged_timers series one scrape reports: tags are
// the clients' own words, and a node may hold millions of distinct ones,
// each up to a request body long. The first MaxTagSeries tags in name
// order of at most MaxTagLabelBytes are reported; chronos_statistics_tags
// counts every tag, so it tells when some are not.
const (
	MaxTagSeries     = 1000
	MaxTagLabelBytes = 256
)

// nodeCollector reports nodeMetrics and the per-tag counts, reading the
// node's counters once per scrape.
type nodeCollector struct {
	read  func() (node.Stats, node.ResyncStatus)
	descs []*prometheus.Desc
	tags  *prometheus.Desc
}

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- c.tags
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	st, r := c.read()
	for i, m := range nodeMetrics {
		ch <- prometheus.MustNewConstMetric(c.descs[i], m.kind, m.value(st, r))
	}
	reported := 0
	for _, tag := range slices.Sorted(maps.Keys(st.Tags)) {
		if reported == MaxTagSeries {
			break
		}
		if len(tag) > MaxTagLabelBytes {
			continue
		}
		// The node takes only valid UTF-8, which is all a label value
		// needs; an error would only drop the series, never the scrape.
		if m, err := prometheus.NewConstMetric(c.tags, prometheus.GaugeValue, float64(st.Tags[tag]), tag); err == nil {
			ch <- m
			reported++
		}
	}
}

// RegisterNode adds the node's own figures to reg: its counters, the
// timers it holds and the latest resync's progress, each scrape reading
// them once with read (under the node's lock).
func RegisterNode(reg prometheus.Registerer, read func() (node.Stats, node.ResyncStatus)) {
	c := &nodeCollector{read: read}
	for _, m := range nodeMetrics {
		c.descs = append(c.descs, prometheus.NewDesc(m.name, m.help, nil, m.labels))
	}
	c.tags = prometheus.NewDesc("chronos_tagged_timers",
		"Live timers held per statistics tag, each counted by its tag's count (api.md statistics).", []string{"tag"}, nil)
	reg.MustRegister(c)
}

// RegisterCertRefusals adds the internal requests refused for want of a
// client certificate, as refused counts them, beside the node's other
// refusals.
func RegisterCertRefusals(reg prometheus.Registerer, refused func() uint64) {
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "chronos_internal_refused_total", Help: refusedHelp, ConstLabels: prometheus.Labels{"reason": "certificate"},
	}, func() float64 { return float64(refused()) }))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
