package sim

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// CLI implements the chronos-sim commands, so that main stays a flag
// parser. Exit codes: 0 pass, 1 a check failed, 2 bad usage or input.
type CLI struct {
	Stdout, Stderr io.Writer
}

// load returns the plan of a seed or of a scenario file.
func (c CLI) load(seed uint64, scenario string) (*Plan, bool) {
	if scenario == "" {
		if seed == 0 {
			fmt.Fprintln(c.Stderr, "chronos-sim: give -seed S (S > 0) or -scenario F")
			return nil, false
		}
		return Generate(seed), true
	}
	f, err := os.Open(scenario)
	if err != nil {
		fmt.Fprintln(c.Stderr, "chronos-sim:", err)
		return nil, false
	}
	defer f.Close()
	p, err := ParseScenario(f)
	if err != nil {
		fmt.Fprintln(c.Stderr, "chronos-sim:", err)
		return nil, false
	}
	p.Origin = scenario
	return p, true
}

// Run runs one plan; on failure it writes the failure report and the HTML
// report. The last line is the Summary.
func (c CLI) Run(seed uint64, scenario, htmlPath string) int {
	p, ok := c.load(seed, scenario)
	if !ok {
		return 2
	}
	res := Run(p, Options{})
	code := 0
	if res.Failed() {
		code = 1
		if htmlPath == "" {
			htmlPath = fmt.Sprintf("chronos-sim-%d.html", p.Seed)
		}
		if err := writeHTMLFile(htmlPath, res); err != nil {
			fmt.Fprintln(c.Stderr, "chronos-sim:", err)
			htmlPath = ""
		}
		WriteFailure(c.Stdout, res, htmlPath)
	}
	fmt.Fprintln(c.Stdout, Summary(res))
	return code
}

// Replay runs one plan printing its trace, then the summary.
func (c CLI) Replay(seed uint64, scenario string) int {
	p, ok := c.load(seed, scenario)
	if !ok {
		return 2
	}
	if err := WriteScenario(c.Stdout, p); err != nil {
		return 2
	}
	res := Run(p, Options{Trace: c.Stdout, TraceBodies: true})
	if res.Failed() {
		WriteFailure(c.Stdout, res, "")
	}
	fmt.Fprintln(c.Stdout, Summary(res))
	if res.Failed() {
		return 1
	}
	return 0
}

// Sweep runs seeds from..from+n-1 on every core, each twice to check the
// trace hashes match, with progress on stderr and a summary on stdout.
func (c CLI) Sweep(from uint64, n int) int {
	start := time.Now()
	var mu sync.Mutex
	var failed []string
	done, events := 0, uint64(0)
	// collided counts the seeds in which some node met another timer
	// under a timer's ID: the collision defence at work.
	collided := 0
	var cov checker.Coverage
	known, err := ReadKnownFailing(KnownFailingFile)
	if err != nil {
		fmt.Fprintln(c.Stderr, err)
		return 2
	}
	pinned := 0
	work := make(chan uint64)
	var wg sync.WaitGroup
	tty := isTerminal(c.Stderr)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for seed := range work {
				p := Generate(seed)
				a, b := Run(p, Options{}), Run(p, Options{})
				mu.Lock()
				done++
				events += a.Events
				cov.Add(a.Coverage)
				if a.IDCollisions > 0 {
					collided++
				}
				switch {
				case a.TraceHash != b.TraceHash:
					failed = append(failed, fmt.Sprintf("seed=%d NONDETERMINISTIC trace %016x vs %016x", seed, a.TraceHash, b.TraceHash))
				case a.Failed() && known[seed].Kind == failureKind(a):
					pinned++ // a known problem (KnownFailingFile)
				case a.Failed():
					failed = append(failed, Summary(a)+" mix="+mixString(p)+" first="+firstProblem(a))
				}
				switch {
				case tty:
					fmt.Fprintf(c.Stderr, "\rsweep: %d/%d seeds, %d failed", done, n, len(failed))
				case done%1000 == 0 || done == n:
					fmt.Fprintf(c.Stderr, "sweep: %d/%d seeds, %d failed\n", done, n, len(failed))
				}
				mu.Unlock()
			}
		})
	}
	for s := from; s < from+uint64(n); s++ {
		work <- s
	}
	close(work)
	wg.Wait()
	if tty {
		fmt.Fprintln(c.Stderr)
	}
	for _, f := range failed {
		fmt.Fprintln(c.Stdout, f)
	}
	fmt.Fprintf(c.Stdout, "sweep: %d seeds from %d, %d failed, %d events, %v\n", n, from, len(failed), events, time.Since(start).Round(time.Millisecond))
	if pinned > 0 {
		fmt.Fprintf(c.Stdout, "sweep: %d seeds failed as pinned in %s\n", pinned, KnownFailingFile)
	}
	fmt.Fprintf(c.Stdout, "sweep: %d seeds met an ID collision (mix %s)\n", collided, mixSharedInstance)
	for _, line := range strings.Split(strings.TrimSpace(cov.String()), "\n") {
		fmt.Fprintf(c.Stdout, "sweep: %s\n", line)
	}
	if len(failed) > 0 {
		return 1
	}
	return 0
}

// firstProblem names a failed run's first problem in a few words.
func firstProblem(r *Result) string {
	switch {
	case r.Panic != "":
		return "panic"
	case len(r.Unmet) > 0:
		return r.Unmet[0]
	case len(r.Violations) > 0:
		v := firstViolation(r.Violations)
		return fmt.Sprintf("%s@%v:%s", v.Guarantee, v.At, v.Message)
	}
	return ""
}

// Shrink reduces a failing plan to a small one that still fails the same
// way and writes it as a scenario file.
func (c CLI) Shrink(seed uint64, scenario, out string) int {
	p, ok := c.load(seed, scenario)
	if !ok {
		return 2
	}
	res := Run(p, Options{})
	if !res.Failed() {
		fmt.Fprintln(c.Stdout, "chronos-sim: the plan passes; nothing to shrink")
		fmt.Fprintln(c.Stdout, Summary(res))
		return 0
	}
	small, runs := Shrink(p, res, func(step string) { fmt.Fprintf(c.Stderr, "\rshrink: %s", step) })
	fmt.Fprintln(c.Stderr)
	if out == "" {
		out = fmt.Sprintf("scenarios/shrunk-%d.scenario", p.Seed)
	}
	if err := writeScenarioFile(out, small); err != nil {
		fmt.Fprintln(c.Stderr, "chronos-sim:", err)
		return 2
	}
	small.Origin = out
	final := Run(small, Options{})
	fmt.Fprintf(c.Stdout, "shrunk %d steps to %d in %d runs: %s\n", len(p.Steps), len(small.Steps), runs, out)
	WriteFailure(c.Stdout, final, "")
	fmt.Fprintln(c.Stdout, Summary(final))
	return 1
}

func writeScenarioFile(path string, p *Plan) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteScenario(f, p); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeHTMLFile writes the HTML report of a failed run.
func writeHTMLFile(path string, res *Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeHTML(f, res); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// isTerminal reports whether w is a terminal, where progress may redraw
// one line; in a log (CI) it would pile up thousands of carriage returns.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
