// Command chronos-sim runs the deterministic Chronos simulator.
//
//	chronos-sim run    -seed S | -scenario F [-html out.html]   one run; exit 0 only if every check passed
//	chronos-sim sweep  -seeds N [-from S]                       many seeds, progress on stderr, summary
//	chronos-sim replay -seed S | -scenario F                    one run, printing the trace
//	chronos-sim shrink -seed S | -scenario F [-out F]           write a minimal failing scenario
//
// Every command takes -cpuprofile F and -memprofile F: a CPU profile of the
// command and a profile of its allocations, for go tool pprof.
//
// The last line of run and replay gives the seed, the trace hash (the same
// for both) and the result. A run with violations, failed or expected by
// its scenario, writes the failure report and the HTML report.
// Exit codes: 0 pass, 1 a check failed, 2 bad usage or input.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/sim"
)

// command is one of chronos-sim's commands, with its line of -h.
type command struct {
	name, args, about string
}

// commands lists the commands in the order -h shows them.
var commands = []command{
	{"run", "-seed S | -scenario F [-html F]", "one run; on violations a report and an HTML report; exit 0 only if every check passed"},
	{"sweep", "-seeds N [-from S]", "many seeds, each run twice with the trace hashes compared; progress on stderr, a summary"},
	{"replay", "-seed S | -scenario F [-log]", "one run, printing the plan and every event with the message bodies"},
	{"shrink", "-seed S | -scenario F [-out F]", "reduce a failing run to a small scenario file that fails the same way"},
}

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	switch cmd {
	case "-h", "-help", "--help", "help":
		usage(os.Stdout)
		os.Exit(0)
	}
	c, ok := findCommand(cmd)
	if !ok {
		fmt.Fprintf(os.Stderr, "chronos-sim: no command %q\n\n", cmd)
		usage(os.Stderr)
		os.Exit(2)
	}
	fs := flag.NewFlagSet("chronos-sim "+cmd, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: chronos-sim %s %s\n  %s\n\nflags:\n", c.name, c.args, c.about)
		fs.PrintDefaults()
	}
	seed := fs.Uint64("seed", 0, "seed to run")
	scenario := fs.String("scenario", "", "scenario file to run")
	seeds := fs.Int("seeds", 200, "sweep: how many seeds")
	from := fs.Uint64("from", 1, "sweep: first seed")
	html := fs.String("html", "", "run: where to write the HTML report of a run with violations (default chronos-sim-<seed>.html)")
	out := fs.String("out", "", "shrink: scenario file to write (default scenarios/shrunk-<seed>.scenario)")
	logs := fs.Bool("log", false, "replay: print the nodes' debug logs among the events, at virtual time")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the command to this file (go tool pprof)")
	memProfile := fs.String("memprofile", "", "write a heap profile, taken when the command ends, to this file (go tool pprof)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(sim.GCPercent)
	}
	stop, err := startProfiles(*cpuProfile, *memProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chronos-sim:", err)
		os.Exit(2)
	}
	var code int
	switch cmd {
	case "run":
		code = run(*seed, *scenario, *html)
	case "sweep":
		code = sweep(*from, *seeds)
	case "replay":
		code = replay(*seed, *scenario, *logs)
	case "shrink":
		code = shrink(*seed, *scenario, *out)
	}
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "chronos-sim:", err)
		code = max(code, 2)
	}
	os.Exit(code)
}

// startProfiles starts a CPU profile into cpuPath, if set; the function it
// returns stops it and writes a heap profile into memPath, if set, so that
// a slow or greedy run (docs/simulator.md, "Limits") can be looked at with
// go tool pprof.
func startProfiles(cpuPath, memPath string) (stop func() error, err error) {
	var cpu *os.File
	if cpuPath != "" {
		if cpu, err = os.Create(cpuPath); err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, err
		}
	}
	return func() error {
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				return err
			}
		}
		if memPath == "" {
			return nil
		}
		return writeFile(memPath, func(w io.Writer) error { return pprof.Lookup("allocs").WriteTo(w, 0) })
	}, nil
}

// findCommand returns the command called name.
func findCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usage lists the commands, one a line.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: chronos-sim <command> [flags]   (chronos-sim <command> -h for its flags)")
	fmt.Fprintln(w, "\nThe deterministic Chronos simulator. Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.about)
		fmt.Fprintf(w, "          chronos-sim %s %s\n", c.name, c.args)
	}
	fmt.Fprintln(w, "\nExit codes: 0 pass, 1 a check failed, 2 bad usage or input. docs/simulator.md tells more.")
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

// run runs one plan; when it failed, or broke guarantees its scenario
// expects it to break, it writes the failure report and the HTML report.
// The last line is the summary.
func run(seed uint64, scenario, htmlPath string) int {
	p, ok := load(seed, scenario)
	if !ok {
		return 2
	}
	res := sim.Run(p, sim.Options{})
	code := 0
	if res.Failed() {
		code = 1
	}
	if res.Failed() || len(res.Violations) > 0 {
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
func replay(seed uint64, scenario string, logs bool) int {
	p, ok := load(seed, scenario)
	if !ok {
		return 2
	}
	if err := sim.WriteScenario(os.Stdout, p); err != nil {
		return 2
	}
	res := sim.Run(p, sim.Options{Trace: os.Stdout, TraceBodies: true, TraceLogs: logs})
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
		case o.Pinned(known) && o.Deterministic():
			pinned++
		case !o.Deterministic() || o.Result.Failed():
			failed = append(failed, o.Line())
			// At once too: a long sweep's failures can be replayed
			// while it runs; the summary lists them all at its end.
			fmt.Fprintf(os.Stderr, "sweep: FAIL %s\n", o.Line())
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
