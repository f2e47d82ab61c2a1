package main

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// outboundMetric is the counter of a node's outbound requests by kind and
// outcome (transport.Client's metrics).
const outboundMetric = "chronos_outbound_requests_total"

// scrapeOutbound sums the nodes' outbound request counters by kind and
// outcome, keyed "callback shed" and so on. A node that does not answer,
// or serves no such metrics (an older build), adds nothing.
func scrapeOutbound(targets []string) map[string]float64 {
	sums := map[string]float64{}
	client := &http.Client{Timeout: 5 * time.Second}
	for _, t := range targets {
		resp, err := client.Get("http://" + t + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			addOutbound(sums, sc.Text())
		}
		resp.Body.Close()
	}
	return sums
}

// The counters of the batches of requests between nodes, and of the
// requests they carried, summed as "peer batches" and "peer batched".
var batchMetrics = map[string]string{
	"chronos_outbound_batches_total":          "peer batches",
	"chronos_outbound_batched_requests_total": "peer batched",
}

// addOutbound adds one line of the Prometheus text format to sums if it
// is a sample of outboundMetric or of a batch counter.
func addOutbound(sums map[string]float64, line string) {
	if name, value, ok := strings.Cut(line, " "); ok && batchMetrics[name] != "" {
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			sums[batchMetrics[name]] += v
		}
		return
	}
	rest, ok := strings.CutPrefix(line, outboundMetric+"{")
	if !ok {
		return
	}
	labels, value, ok := strings.Cut(rest, "} ")
	if !ok {
		return
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil {
		return
	}
	var kind, outcome string
	for _, l := range strings.Split(labels, ",") {
		k, val, _ := strings.Cut(l, "=")
		val = strings.Trim(val, `"`)
		switch k {
		case "kind":
			kind = val
		case "outcome":
			outcome = val
		}
	}
	sums[kind+" "+outcome] += v
}
