// Command chronos-mutate runs the mutation audit: each deliberate bug of
// mutations/ is applied to a copy of the repository and the simulator's
// sweep runs on it. It prints one line per mutation and the catch rate,
// and exits 1 if any mutation was missed or no longer applies.
//
//	go run ./cmd/chronos-mutate [-seeds 1000] [-first 50] [-only name,...]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/chronos-timer/chronos/mutations"
)

func main() {
	seeds := flag.Int("seeds", 1000, "seeds to sweep per mutation (1..seeds)")
	first := flag.Int("first", 50, "sweep seeds 1..first before all seeds, which only a mutation they miss needs (0: sweep all seeds, for the full counts)")
	only := flag.String("only", "", "comma-separated mutation names to run (default: all)")
	dir := flag.String("dir", "mutations", "folder of the mutation patches")
	verbose := flag.Bool("v", false, "print each sweep's output")
	flag.Parse()
	os.Exit(run(*dir, *seeds, *first, *only, *verbose))
}

func run(dir string, seeds, first int, only string, verbose bool) int {
	ms, err := mutations.Load(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if only != "" {
		names := strings.Split(only, ",")
		ms = slices.DeleteFunc(ms, func(m mutations.Mutation) bool { return !slices.Contains(names, m.Name) })
	}
	log := io.Discard
	if verbose {
		log = os.Stderr
	}
	snap, err := mutations.Snapshot(context.Background(), ".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(snap)
	base := mutations.NewBaseline(snap)
	defer base.Close()
	caught, bad := 0, 0
	for _, m := range ms {
		o, err := mutations.Run(context.Background(), snap, m, seeds, first, base, log)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println(o.Line())
		if o.Caught() {
			caught++
		} else {
			bad++
		}
	}
	fmt.Printf("mutate: %d of %d mutations caught by the sweep of seeds 1..%d\n", caught, len(ms), seeds)
	if bad > 0 {
		return 1
	}
	return 0
}
