// Command chronos-sim runs the deterministic Chronos simulator.
//
//	chronos-sim run    -seed S | -scenario F [-html out.html]   one run; exit 0 only if every check passed
//	chronos-sim sweep  -seeds N [-from S]                       many seeds, progress on stderr, summary
//	chronos-sim replay -seed S | -scenario F                    one run, printing the trace
//	chronos-sim shrink -seed S | -scenario F [-out F]           write a minimal failing scenario
//
// The last line of run gives the seed, the trace hash and the result.
package main

import (
	"flag"
	"fmt"
	"os"

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
	cli := sim.CLI{Stdout: os.Stdout, Stderr: os.Stderr}
	var code int
	switch cmd {
	case "run":
		code = cli.Run(*seed, *scenario, *html)
	case "sweep":
		code = cli.Sweep(*from, *seeds)
	case "replay":
		code = cli.Replay(*seed, *scenario)
	case "shrink":
		code = cli.Shrink(*seed, *scenario, *out)
	default:
		usage()
	}
	os.Exit(code)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: chronos-sim run|sweep|replay|shrink [-seed S] [-scenario F] [-seeds N]")
	os.Exit(2)
}
