package nemesis

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// maxStories bounds how many timers' stories a report tells.
const maxStories = 12

// Columns are the per-round table's finding kinds, in order.
var Columns = []checker.FindingKind{checker.FAcked, checker.FUnknown, checker.FDue, checker.FLost, checker.FEarly, checker.FLate,
	checker.FDupFault, checker.FDupHeal, checker.FDupHealthy, checker.FDupRetried, checker.FStale, checker.FResurrection, checker.FLateLanding}

// Row is one round's line of the table: what each finding kind counted
// in it (by the time the checker gives each finding), and how many
// violations fell in it.
type Row struct {
	Name       string
	Counts     map[checker.FindingKind]int
	Violations int
}

// Table is the per-round table: the lead-in, each round from its fault
// to the end of its settling, and the tail.
func Table(rec Record, v checker.RealVerdict) []Row {
	rows := make([]Row, len(rec.Rounds)+1)
	for i, r := range rec.Rounds {
		rows[i] = Row{Name: roundName(r), Counts: map[checker.FindingKind]int{}}
	}
	total := &rows[len(rows)-1]
	*total = Row{Name: "total", Counts: map[checker.FindingKind]int{}}
	at := func(t time.Duration) *Row {
		for i, r := range rec.Rounds {
			if t < r.To || i == len(rec.Rounds)-1 {
				return &rows[i]
			}
		}
		return &Row{Counts: map[checker.FindingKind]int{}} // no rounds: the total alone
	}
	for _, f := range v.Findings {
		at(f.At).Counts[f.Kind]++
		total.Counts[f.Kind]++
	}
	for _, x := range v.Violations {
		at(x.At).Violations++
		total.Violations++
	}
	return rows
}

func roundName(r RoundTimes) string {
	switch r.Kind {
	case "none":
		return "lead-in"
	case "tail":
		return "tail"
	}
	return fmt.Sprintf("%d %s %s %v", r.N, r.Kind, r.target(), r.For)
}

// WriteTable writes the table as aligned text.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "round\t")
	for _, c := range Columns {
		fmt.Fprintf(tw, "%s\t", c)
	}
	fmt.Fprint(tw, "violations\t\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t", r.Name)
		for _, c := range Columns {
			fmt.Fprintf(tw, "%d\t", r.Counts[c])
		}
		fmt.Fprintf(tw, "%d\t\n", r.Violations)
	}
	return tw.Flush()
}

// Report writes the run's report: the table, the checker's coverage,
// each violation, the story of each timer a violation names, and the
// nodes' unexpected exits.
func (r *Result) Report(w io.Writer) error {
	b := bufio.NewWriter(w)
	h := &r.Record.History
	fmt.Fprintf(b, "\nnemesis report, seed %d: %d ops (%d attempts), %d deliveries, %d fault events, %v\n",
		r.Record.Seed, len(h.Ops), len(h.Attempts), len(h.Pops), len(h.Faults), h.End.Round(time.Second))
	for i, m := range h.Members {
		fmt.Fprintf(b, "  n%d = %s\n", i+1, m)
	}
	fmt.Fprintln(b)
	if err := WriteTable(b, Table(r.Record, r.Verdict)); err != nil {
		return err
	}
	fmt.Fprintf(b, "\n%s", r.Verdict.Coverage)
	fmt.Fprintf(b, "real-run allowances: held-delivery=%d (deliveries a fault between their node and the endpoint may have held) retried-write=%d (G4 violations a write's retries explain)\n",
		r.Verdict.HeldDeliveries, r.Verdict.Retried)
	for _, x := range r.Exits {
		fmt.Fprintf(b, "EXIT %s\n", x)
	}
	fmt.Fprintf(b, "\nviolations: %s\n", countViolations(r.Verdict.Violations))
	for _, v := range r.Verdict.Violations {
		fmt.Fprintf(b, "  %s at %v timer %016x: %s\n", v.Guarantee, v.At, v.Timer, v.Message)
	}
	timers := violatedTimers(r.Verdict.Violations)
	for i, t := range timers {
		if i == maxStories {
			fmt.Fprintf(b, "\n... and %d more timers with violations (history.json has them all)\n", len(timers)-i)
			break
		}
		r.story(b, t)
	}
	if r.Dir != "" {
		fmt.Fprintf(b, "\nrun folder: %s (history.json, report.txt, nX/chronos.log)\n", r.Dir)
	}
	return b.Flush()
}

func countViolations(vs []checker.Violation) string {
	if len(vs) == 0 {
		return "none"
	}
	n := map[string]int{}
	for _, v := range vs {
		n[v.Guarantee]++
	}
	var parts []string
	for _, g := range slices.Sorted(maps.Keys(n)) {
		parts = append(parts, fmt.Sprintf("%s %d", g, n[g]))
	}
	return fmt.Sprintf("%d (%s)", len(vs), strings.Join(parts, ", "))
}

func violatedTimers(vs []checker.Violation) []uint64 {
	var ts []uint64
	for _, v := range vs {
		if v.Timer != 0 && !slices.Contains(ts, v.Timer) {
			ts = append(ts, v.Timer)
		}
	}
	return ts
}

// story tells everything the run knows of timer t: its writes and their
// attempts, its deliveries by node, the faults, and the node log lines
// that name it.
func (r *Result) story(w io.Writer, t uint64) {
	h := &r.Record.History
	fmt.Fprintf(w, "\n--- timer %016x\n", t)
	opaques := map[string]bool{}
	for _, op := range h.Ops {
		if op.Timer != t {
			continue
		}
		opaques[op.Spec.Opaque] = op.Kind != checker.Delete
		fmt.Fprintf(w, "  %9v op %d %s via %s", op.Invoke.Round(time.Millisecond), op.Seq, op.Kind, op.Node)
		if op.Kind != checker.Delete {
			fmt.Fprintf(w, " %q every %v for %v rf %d", op.Spec.Opaque, op.Spec.Interval, op.Spec.RepeatFor, op.Spec.ReplicationFactor)
		}
		fmt.Fprintf(w, " -> %s %d at %v\n", op.Outcome, op.Status, op.Return.Round(time.Millisecond))
		for _, a := range h.Attempts {
			if a.Op == op.Seq {
				fmt.Fprintf(w, "  %9v   attempt to %s, status %d at %v\n", a.Invoke.Round(time.Millisecond), a.Node, a.Status, a.Return.Round(time.Millisecond))
			}
		}
	}
	for _, p := range h.Pops {
		if p.Timer == t || opaques[p.Opaque] {
			fmt.Fprintf(w, "  %9v pop seq %d %q from %s\n", p.At.Round(time.Millisecond), p.Seq, p.Opaque, p.Node)
		}
	}
	for _, f := range h.Faults {
		fmt.Fprintf(w, "  %9v fault %s %v | %v %s\n", f.At.Round(time.Millisecond), f.Kind, f.Nodes, f.Peers, f.Detail)
	}
	lines := r.logLines(t)
	if len(lines) == 0 {
		fmt.Fprintf(w, "  (no node log line names %016x)\n", t)
	}
	for _, l := range lines {
		fmt.Fprintf(w, "  log %s\n", l)
	}
}

// logLines are the lines of the nodes' logs that name timer t.
func (r *Result) logLines(t uint64) []string {
	if r.Dir == "" {
		return nil
	}
	id := fmt.Sprintf("%016x", t)
	files, _ := filepath.Glob(filepath.Join(r.Dir, "n*", "chronos.log"))
	var out []string
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), id) {
				out = append(out, filepath.Base(filepath.Dir(f))+": "+sc.Text())
			}
		}
		fh.Close()
	}
	return out
}
