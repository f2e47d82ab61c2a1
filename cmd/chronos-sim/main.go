// Command chronos-sim runs the deterministic Chronos simulator.
//
//	chronos-sim run    -seed S | -scenario F [-html out.html]   one run; exit 0 only if every check passed
//	chronos-sim sweep  -seeds N [-from S]                       many seeds, progress on stderr, summary
//	chronos-sim replay -seed S | -scenario F                    one run, printing the trace
//	chronos-sim shrink -seed S | -scenario F [-out F]           write a minimal failing scenario
//
// The last line of run gives the seed, the trace hash and the result.
// Exit codes: 0 pass, 1 a check failed, 2 bad usage or input.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/sim"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	seed := fs.Uint64("seed", 0, "seed to run")
	scenario := fs.String("scenario", "", "scenario file to run")
	seeds := fs.Int("seeds", 200, "sweep: how many seeds")
	from := fs.Uint64("from", 1, "sweep: first seed")
	html := fs.String("html", "", "run: where to write the HTML report on failure (default chronos-sim-<seed>.html)")
	out := fs.String("out", "", "shrink: scenario file to write (default scenarios/shrunk-<seed>.scenario)")
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	var code int
	switch cmd {
	case "run":
		code = run(*seed, *scenario, *html)
	case "sweep":
		code = sweep(*from, *seeds)
	case "replay":
		code = replay(*seed, *scenario)
	case "shrink":
		code = shrink(*seed, *scenario, *out)
	default:
		usage()
	}
	os.Exit(code)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: chronos-sim run|sweep|replay|shrink [-seed S] [-scenario F] [-seeds N]")
	os.Exit(2)
}

// load returns the plan of a seed or of a scenario file.
func load(seed uint64, scenario string) (*sim.Plan, bool) {
	if scenario == "" {
		if seed == 0 {
			fmt.Fprintln(os.Stderr, "chronos-sim: give -seed S (S > 0) or -scenario F")
			return nil, false
		}
		return sim.Generate(seed), true
	}
	f, err := os.Open(scenario)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chronos-sim:", err)
		return nil, false
	}
	defer f.Close()
	p, err := sim.ParseScenario(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chronos-sim:", err)
		return nil, false
	}
	p.Origin = scenario
	return p, true
}

// run runs one plan; on failure it writes the failure report and the HTML
// report. The last line is the summary.
func run(seed uint64, scenario, htmlPath string) int {
	p, ok := load(seed, scenario)
	if !ok {
		return 2
	}
	res := sim.Run(p, sim.Options{})
	code := 0
	if res.Failed() {
		code = 1
		if htmlPath == "" {
			htmlPath = fmt.Sprintf("chronos-sim-%d.html", p.Seed)
		}
		if err := writeFile(htmlPath, func(w io.Writer) error { return sim.WriteHTML(w, res) }); err != nil {
			fmt.Fprintln(os.Stderr, "chronos-sim:", err)
			htmlPath = ""
		}
		sim.WriteFailure(os.Stdout, res, htmlPath)
	}
	fmt.Println(sim.Summary(res))
	return code
}

// replay runs one plan printing its trace, then the summary.
func replay(seed uint64, scenario string) int {
	p, ok := load(seed, scenario)
	if !ok {
		return 2
	}
	if err := sim.WriteScenario(os.Stdout, p); err != nil {
		return 2
	}
	res := sim.Run(p, sim.Options{Trace: os.Stdout, TraceBodies: true})
	if res.Failed() {
		sim.WriteFailure(os.Stdout, res, "")
	}
	fmt.Println(sim.Summary(res))
	if res.Failed() {
		return 1
	}
	return 0
}

// sweep runs seeds from..from+n-1 (sim.Sweep: every core, each seed twice
// to check the trace hashes match), with progress on stderr and a summary
// on stdout. Seeds pinned in sim.KnownFailingFile that fail as pinned are
// counted, not failed.
func sweep(from uint64, n int) int {
	start := time.Now()
	known, err := sim.ReadKnownFailing(sim.KnownFailingFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var failed []string
	var cov checker.Coverage
	probes := sim.NewProbeTable()
	// stored counts the plans whose nodes keep their records on disk, and
	// the lost-copy excuses their checks made (copies-lost must be none).
	stored, storedLost := 0, map[checker.Excuse]int{}
	done, pinned, collided := 0, 0, 0
	events, digest := uint64(0), uint64(0)
	tty := isTerminal(os.Stderr)
	sim.Sweep(sim.Seeds(from, n), func(o sim.SeedOutcome) {
		done++
		events += o.Result.Events
		digest += o.Result.TraceHash
		cov.Add(o.Result.Coverage)
		probes.Add(o.Seed, o.Result)
		if o.Result.History.Storage {
			stored++
			for _, e := range []checker.Excuse{checker.ExCopiesLost, checker.ExDiskLost} {
				storedLost[e] += o.Result.Coverage.Excused[e]
			}
		}
		if o.Result.IDCollisions > 0 {
			collided++ // the collision defence at work
		}
		switch {
		case !o.Deterministic():
			failed = append(failed, o.Line())
		case o.Pinned(known):
			pinned++
		case o.Result.Failed():
			failed = append(failed, o.Line())
		}
		switch {
		case tty:
			fmt.Fprintf(os.Stderr, "\rsweep: %d/%d seeds, %d failed", done, n, len(failed))
		case done%1000 == 0 || done == n:
			fmt.Fprintf(os.Stderr, "sweep: %d/%d seeds, %d failed\n", done, n, len(failed))
		}
	})
	if tty {
		fmt.Fprintln(os.Stderr)
	}
	for _, f := range failed {
		fmt.Println(f)
	}
	fmt.Printf("sweep: %d seeds from %d, %d failed, %d events, %v\n", n, from, len(failed), events, time.Since(start).Round(time.Millisecond))
	// The sum of the seeds' trace hashes, whatever order they finished
	// in: a change that claims to change no behaviour leaves it as it was.
	fmt.Printf("sweep: trace digest %016x\n", digest)
	if pinned > 0 {
		fmt.Printf("sweep: %d seeds failed as pinned in %s\n", pinned, sim.KnownFailingFile)
	}
	fmt.Printf("sweep: %d seeds met an ID collision (mix %s)\n", collided, sim.MixSharedInstance)
	fmt.Printf("sweep: %d seeds kept their records on disk (mix %s): excused there %s=%d %s=%d\n", stored, sim.MixStorage,
		checker.ExCopiesLost, storedLost[checker.ExCopiesLost], checker.ExDiskLost, storedLost[checker.ExDiskLost])
	for _, line := range strings.Split(strings.TrimSpace(cov.String()), "\n") {
		fmt.Printf("sweep: %s\n", line)
	}
	probes.Write(os.Stdout)
	if len(failed) > 0 {
		return 1
	}
	return 0
}

// shrink reduces a failing plan to a small one that still fails the same
// way and writes it as a scenario file.
func shrink(seed uint64, scenario, out string) int {
	p, ok := load(seed, scenario)
	if !ok {
		return 2
	}
	res := sim.Run(p, sim.Options{})
	if !res.Failed() {
		fmt.Println("chronos-sim: the plan passes; nothing to shrink")
		fmt.Println(sim.Summary(res))
		return 0
	}
	small, runs := sim.Shrink(p, res, func(step string) { fmt.Fprintf(os.Stderr, "\rshrink: %s", step) })
	fmt.Fprintln(os.Stderr)
	if out == "" {
		out = fmt.Sprintf("scenarios/shrunk-%d.scenario", p.Seed)
	}
	if err := writeFile(out, func(w io.Writer) error { return sim.WriteScenario(w, small) }); err != nil {
		fmt.Fprintln(os.Stderr, "chronos-sim:", err)
		return 2
	}
	small.Origin = out
	final := sim.Run(small, sim.Options{})
	fmt.Printf("shrunk %d steps to %d in %d runs: %s\n", len(p.Steps), len(small.Steps), runs, out)
	sim.WriteFailure(os.Stdout, final, "")
	fmt.Println(sim.Summary(final))
	return 1
}

// writeFile creates path and fills it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// isTerminal reports whether f is a terminal, where progress may redraw
// one line; in a log (CI) it would pile up thousands of carriage returns.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
