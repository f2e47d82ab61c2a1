package sim

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/chronos-timer/chronos/node"
)

// ProbeTable sums the nodes' coverage probes (node/probe.go) over the runs
// of a sweep: per probe, how often it was passed, by how many runs, and
// the lowest seed that passed it (to replay it).
type ProbeTable struct {
	Names []string
	Hits  []uint64
	Runs  []int
	First []uint64
	// Total is how many runs were added.
	Total int
}

// NewProbeTable returns an empty table of every probe the node declares.
func NewProbeTable() *ProbeTable {
	names := node.ProbeNames()
	return &ProbeTable{Names: names, Hits: make([]uint64, len(names)), Runs: make([]int, len(names)),
		First: make([]uint64, len(names))}
}

// Add counts one run's probes.
func (t *ProbeTable) Add(seed uint64, r *Result) {
	t.Total++
	for i, h := range r.Probes {
		if h == 0 {
			continue
		}
		t.Hits[i] += h
		t.Runs[i]++
		if t.First[i] == 0 || seed < t.First[i] {
			t.First[i] = seed
		}
	}
}

// Unreached lists the probes no run passed, in declaration order.
func (t *ProbeTable) Unreached() []string {
	var out []string
	for i, name := range t.Names {
		if t.Hits[i] == 0 {
			out = append(out, name)
		}
	}
	return out
}

// Write prints the table, one probe a line: its name, its hits, how many
// runs passed it and the first seed that did; then the probes never
// passed.
func (t *ProbeTable) Write(w io.Writer) {
	width := 0
	for _, name := range t.Names {
		width = max(width, len(name))
	}
	fmt.Fprintf(w, "probes: %d declared, %d reached in %d runs\n", len(t.Names), len(t.Names)-len(t.Unreached()), t.Total)
	fmt.Fprintf(w, "  %-*s %12s %6s %s\n", width, "probe", "hits", "runs", "first seed")
	for i, name := range t.Names {
		first := "-"
		if t.Hits[i] > 0 {
			first = fmt.Sprint(t.First[i])
		}
		fmt.Fprintf(w, "  %-*s %12d %6d %s\n", width, name, t.Hits[i], t.Runs[i], first)
	}
	if un := t.Unreached(); len(un) > 0 {
		fmt.Fprintf(w, "probes never reached: %s\n", strings.Join(un, " "))
	}
}

// Check holds the table to the CI sweep's promise: every probe reached,
// except those pinned in pending (a probe the workload cannot reach yet,
// with the reason), and no pinned probe reached (its pin is stale). It
// returns one message per problem.
func (t *ProbeTable) Check(pending map[string]string) []string {
	var problems []string
	for i, name := range t.Names {
		why, pinned := pending[name]
		switch {
		case t.Hits[i] == 0 && !pinned:
			problems = append(problems, fmt.Sprintf("probe %s was never reached by %d runs: make the workload reach it (docs/simulator.md, coverage probes); do not delete the probe",
				name, t.Total))
		case t.Hits[i] > 0 && pinned:
			problems = append(problems, fmt.Sprintf("probe %s is pinned as unreached in %s (%s) but %d runs reached it (first seed %d): unpin it",
				name, UnreachedProbesFile, why, t.Runs[i], t.First[i]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(pending)) {
		if !slices.Contains(t.Names, name) {
			problems = append(problems, fmt.Sprintf("%s pins probe %s, which the node does not declare", UnreachedProbesFile, name))
		}
	}
	return problems
}

// UnreachedProbesFile is where, under the repository root, probes are
// pinned that the CI sweep does not reach yet: one "<probe> <reason>" a
// line, # starting a comment.
const UnreachedProbesFile = "scenarios/unreached-probes.txt"

// ReadUnreachedProbes reads a file of pinned probes. A missing file pins
// nothing.
func ReadUnreachedProbes(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	pinned := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		name, why, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch {
		case name == "":
			continue
		case strings.TrimSpace(why) == "":
			return nil, fmt.Errorf("%s:%d: want <probe> <reason>", path, i+1)
		}
		pinned[name] = strings.TrimSpace(why)
	}
	return pinned, nil
}
