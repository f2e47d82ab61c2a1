// Command chronos-nemesis runs real chronos processes, each in a network
// namespace of its own, through rounds of faults, and judges what their
// clients saw with the checker's real-run mode (docs/nemesis.md).
//
//	chronos-nemesis [-seed 1] [-rounds 8] [-dir DIR] [-mutation FILE.patch]
//	chronos-nemesis judge -dir DIR
//
// It exits 0 when the run found no violation, 1 when it did, 2 on an
// error, and 0 with a SKIP line where namespaces cannot be made (not
// root, no /dev/net/tun).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/internal/localcluster"
	"github.com/chronos-timer/chronos/mutations"
	"github.com/chronos-timer/chronos/nemesis"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "judge" {
		os.Exit(judge(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	c := nemesis.DefaultConfig()
	fs := flag.NewFlagSet("chronos-nemesis", flag.ExitOnError)
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the schedule, the workload and the switch")
	fs.IntVar(&c.Nodes, "nodes", c.Nodes, "cluster size")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "rounds of faults (the first ones use each kind once)")
	fs.DurationVar(&c.Lead, "lead", c.Lead, "healthy stretch before the first round")
	fs.DurationVar(&c.Settle, "settle", c.Settle, "healthy stretch after each heal")
	fs.DurationVar(&c.Tail, "tail", c.Tail, "stretch after the last round, with the workload stopped")
	fs.IntVar(&c.Workload.Workers, "workers", c.Workload.Workers, "clients writing at once")
	fs.DurationVar(&c.Workload.Think, "think", c.Workload.Think, "mean wait of a client between operations")
	fs.DurationVar(&c.NetSlack, "net-slack", c.NetSlack, "lateness a healthy exchange may show on this machine")
	fs.DurationVar(&c.Bounds.LandWithin, "land-within", c.Bounds.LandWithin, "R3: a write lands within this of the end of its last attempt, or never")
	fs.DurationVar(&c.Bounds.HealWithin, "heal-within", c.Bounds.HealWithin, "R1, R2: a heal's after-effects end within this, plus the rank bound")
	fs.StringVar(&c.Dir, "dir", "", "run folder, kept (default: a new temporary folder)")
	fs.StringVar(&c.Chronos, "chronos", "", "node binary (default: build ./cmd/chronos into the run folder)")
	faults := fs.String("faults", "", "comma-separated fault kinds the rounds draw from (default all: "+kindList(nemesis.AllFaults)+")")
	mutation := fs.String("mutation", "", "a patch of mutations/ to plant in the node binary: the run must report its violation")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: chronos-nemesis [flags]    (as root; docs/nemesis.md)\n"+
			"       chronos-nemesis judge -dir DIR    (judge a run's history.json again)\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.Parse(args)
	if *faults != "" {
		for _, k := range strings.Split(*faults, ",") {
			c.Kinds = append(c.Kinds, nemesis.FaultKind(strings.TrimSpace(k)))
		}
	}
	if err := nemesis.Supported(); err != nil {
		fmt.Printf("SKIP chronos-nemesis: %v\n", err)
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	var err error
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "chronos-nemesis-"); err != nil {
			return fail(err)
		}
	}
	if err := binary(ctx, &c, *mutation); err != nil {
		return fail(err)
	}
	c.Out = os.Stdout
	start := time.Now()
	res, err := nemesis.Run(ctx, c)
	if errors.Is(err, nemesis.ErrUnsupported) {
		fmt.Printf("SKIP chronos-nemesis: %v\n", err)
		return 0
	}
	if err != nil {
		return fail(err)
	}
	fmt.Printf("nemesis: seed %d took %v; %s\n", c.Seed, time.Since(start).Round(time.Second), verdict(res, *mutation))
	if res.Failed() != (*mutation != "") {
		return 1
	}
	return 0
}

// binary sets c.Chronos: the given binary, or cmd/chronos built into the
// run folder, with the mutation planted when one is given.
func binary(ctx context.Context, c *nemesis.Config, mutation string) error {
	if c.Chronos != "" && mutation == "" {
		return nil
	}
	if mutation == "" {
		bin, err := localcluster.Build(ctx, c.Dir)
		c.Chronos = bin
		return err
	}
	bin := filepath.Join(c.Dir, "chronos")
	ms, err := mutations.Load(filepath.Dir(mutation))
	if err != nil {
		return err
	}
	for _, m := range ms {
		if filepath.Base(m.File) != filepath.Base(mutation) {
			continue
		}
		snap, err := mutations.Snapshot(ctx, ".")
		if err != nil {
			return err
		}
		defer os.RemoveAll(snap)
		stale, err := mutations.Build(ctx, snap, m, "./cmd/chronos", bin)
		if err != nil {
			return err
		}
		if stale != "" {
			return fmt.Errorf("mutation %s: %s", m.Name, stale)
		}
		fmt.Printf("nemesis: node binary with mutation %s planted (%s)\n", m.Name, m.Bug)
		c.Chronos = bin
		return nil
	}
	return fmt.Errorf("no mutation in %s", mutation)
}

func verdict(res *nemesis.Result, mutation string) string {
	switch {
	case mutation != "" && res.Failed():
		return "the planted bug was caught"
	case mutation != "":
		return "FAIL: the planted bug was not caught"
	case res.Failed():
		return "FAIL"
	}
	return "ok"
}

// judge judges the history.json of an earlier run again.
func judge(args []string) int {
	fs := flag.NewFlagSet("chronos-nemesis judge", flag.ExitOnError)
	dir := fs.String("dir", "", "the run folder holding history.json")
	fs.Parse(args)
	rec, err := nemesis.LoadRecord(filepath.Join(*dir, "history.json"))
	if err != nil {
		return fail(err)
	}
	if rec.Bounds == (checker.RealBounds{}) {
		rec.Bounds = checker.DefaultRealBounds()
	}
	res := &nemesis.Result{Record: rec, Dir: *dir,
		Verdict: checker.DefaultOptions().JudgeReal(&rec.History, rec.Bounds)}
	if err := res.Report(os.Stdout); err != nil {
		return fail(err)
	}
	if res.Failed() {
		return 1
	}
	return 0
}

func kindList(ks []nemesis.FaultKind) string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return strings.Join(out, ",")
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "chronos-nemesis:", err)
	return 2
}
