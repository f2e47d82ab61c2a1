// Package mutations is the mutation audit of the simulator: each mutation
// is a small, deliberate bug in node/ or storage/, kept as a patch in this folder, and
// the audit applies each one to a copy of the repository and runs the
// simulator's sweep on it (the sweep alone, no unit test). A mutation the
// sweep does not catch is a hole in the workload or the checkers.
//
// A patch file starts with a header the patch tools skip:
//
//	Mutation: pop-1ms-early
//	Expect: G1
//	Bug: A replica pops one millisecond before the due time.
//	Caught: 2
//
// followed by a unified diff against the repository root (git diff). The
// optional Caught line names seeds an earlier full sweep found failing on
// the mutant alone: the audit replays them first (see stages).
package mutations

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Mutation is one planted bug.
type Mutation struct {
	// Name is the mutation's name; File the patch's path.
	Name, File string
	// Expect is the guarantee expected to catch it; Bug says what it
	// breaks.
	Expect, Bug string
	// Caught holds the seeds an earlier full sweep caught it by.
	Caught []uint64
}

// Load reads the mutations of dir (*.patch), in file name order.
func Load(dir string) ([]Mutation, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.patch"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var ms []Mutation
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		m, err := parseHeader(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		m.File = f
		ms = append(ms, m)
	}
	return ms, nil
}

// parseHeader reads the header lines before the diff.
func parseHeader(data []byte) (Mutation, error) {
	var m Mutation
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "diff ") || strings.HasPrefix(line, "--- ") {
			break
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "Mutation":
			m.Name = strings.TrimSpace(val)
		case "Expect":
			m.Expect = strings.TrimSpace(val)
		case "Bug":
			m.Bug = strings.TrimSpace(val)
		case "Caught":
			for _, f := range strings.Fields(strings.ReplaceAll(val, ",", " ")) {
				seed, err := strconv.ParseUint(f, 10, 64)
				if err != nil || seed == 0 {
					return m, fmt.Errorf("Caught: %q is not a seed", f)
				}
				m.Caught = append(m.Caught, seed)
			}
		}
	}
	if m.Name == "" || m.Expect == "" || m.Bug == "" {
		return m, fmt.Errorf("want a header with Mutation:, Expect: and Bug: lines before the diff")
	}
	if !bytes.Contains(data, []byte("\n--- ")) {
		return m, fmt.Errorf("mutation %s holds no diff", m.Name)
	}
	return m, nil
}

// Sweep is what a sweep's output says.
type Sweep struct {
	// Failed maps each failing seed to the guarantee (or problem) it
	// failed first.
	Failed map[uint64]string
	// From is the first seed, Seeds how many ran.
	From  uint64
	Seeds int
}

// First returns the lowest failing seed and its guarantee.
func (s Sweep) First() (uint64, string, bool) {
	var best uint64
	found := false
	for seed := range s.Failed {
		if !found || seed < best {
			best, found = seed, true
		}
	}
	return best, s.Failed[best], found
}

var (
	failLine    = regexp.MustCompile(`^seed=(\d+) .*?(?:first=([A-Za-z0-9]+)|NONDETERMINISTIC)`)
	summaryLine = regexp.MustCompile(`^sweep: (\d+) seeds from (\d+), (\d+) failed`)
)

// ParseSweep reads the output of `chronos-sim sweep`: one line per failing
// seed ("seed=N ... first=G4@..."), then the summary.
func ParseSweep(out string) (Sweep, error) {
	s := Sweep{Failed: map[uint64]string{}}
	summary := false
	want := 0
	for _, line := range strings.Split(out, "\n") {
		if m := failLine.FindStringSubmatch(line); m != nil {
			seed, err := strconv.ParseUint(m[1], 10, 64)
			if err != nil {
				return s, fmt.Errorf("sweep line %q: %w", line, err)
			}
			g := m[2]
			if g == "" {
				g = "NONDETERMINISTIC"
			}
			s.Failed[seed] = g
		}
		if m := summaryLine.FindStringSubmatch(line); m != nil {
			s.Seeds, _ = strconv.Atoi(m[1])
			s.From, _ = strconv.ParseUint(m[2], 10, 64)
			want, _ = strconv.Atoi(m[3])
			summary = true
		}
	}
	if !summary {
		return s, fmt.Errorf("sweep output has no summary line")
	}
	if want != len(s.Failed) {
		return s, fmt.Errorf("sweep reports %d failed seeds but lists %d", want, len(s.Failed))
	}
	return s, nil
}

// Outcome is the audit's verdict on one mutation.
type Outcome struct {
	Mutation Mutation
	// Stale is set when the patch no longer applies or builds: the
	// audit cannot judge it.
	Stale string
	// Sweep holds the seeds that failed on the mutant and not on the
	// unmutated tree; Discounted counts those that failed on both.
	Sweep      Sweep
	Discounted int
}

// Caught reports whether some seed failed.
func (o Outcome) Caught() bool { return o.Stale == "" && len(o.Sweep.Failed) > 0 }

// Line is the outcome as one line of the report.
func (o Outcome) Line() string {
	m := o.Mutation
	switch {
	case o.Stale != "":
		return fmt.Sprintf("%-28s STALE   %s", m.Name, o.Stale)
	case !o.Caught():
		return fmt.Sprintf("%-28s MISSED  0 of %d seeds failed (expected %s): %s", m.Name, o.Sweep.Seeds, m.Expect, m.Bug)
	}
	seed, g, _ := o.Sweep.First()
	line := fmt.Sprintf("%-28s CAUGHT  first seed %d by %s, %d of %d seeds failed (expected %s)",
		m.Name, seed, g, len(o.Sweep.Failed), o.Sweep.Seeds, m.Expect)
	if o.Sweep.Seeds == 1 {
		line = fmt.Sprintf("%-28s CAUGHT  by seed %d, the one its patch records, by %s (expected %s)",
			m.Name, seed, g, m.Expect)
	}
	if o.Discounted > 0 {
		line += fmt.Sprintf(", %d more that fail unmutated not counted", o.Discounted)
	}
	return line
}

// Snapshot copies the files git tracks under root, as they are in the
// work tree, into a new temporary folder, so that an audit judges one
// state of the tree even while it is edited. The caller removes it.
func Snapshot(ctx context.Context, root string) (string, error) {
	dir, err := os.MkdirTemp("", "chronos-snapshot-")
	if err != nil {
		return "", err
	}
	if err := copyTracked(ctx, root, dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// Baseline is the sweep of the unmutated snapshot, which a mutant's
// sweep is judged against: a seed that fails without any bug planted
// (a known problem not pinned yet, or one another branch brings) would
// catch every mutation, so it catches none. It sweeps each range once,
// on first use, and a range it swept answers for the ranges inside it.
type Baseline struct {
	snapshot string
	dir, bin string
	sweeps   []Sweep
}

// NewBaseline is the baseline of the snapshot; Close removes its files.
func NewBaseline(snapshot string) *Baseline {
	return &Baseline{snapshot: snapshot}
}

// Close removes the baseline's simulator.
func (b *Baseline) Close() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// Sweep returns the sweep of seeds from..from+n-1 of the unmutated tree.
// A sweep already made of a range holding them answers.
func (b *Baseline) Sweep(ctx context.Context, from uint64, n int, log io.Writer) (Sweep, error) {
	for _, s := range b.sweeps {
		if s.From <= from && from+uint64(n) <= s.From+uint64(s.Seeds) {
			return s.cut(from, n), nil
		}
	}
	if b.bin == "" {
		dir, err := os.MkdirTemp("", "chronos-baseline-")
		if err != nil {
			return Sweep{}, err
		}
		b.dir = dir
		bin := filepath.Join(dir, "chronos-sim.bin")
		if stale, err := Build(ctx, b.snapshot, Mutation{}, "./cmd/chronos-sim", bin); err != nil || stale != "" {
			return Sweep{}, fmt.Errorf("unmutated tree: %v%s", err, stale)
		}
		b.bin = bin
	}
	s, err := sweep(ctx, b.dir, b.bin, stage{from, n}, log)
	if err != nil {
		return Sweep{}, fmt.Errorf("sweep of the unmutated tree: %w", err)
	}
	b.sweeps = append(b.sweeps, s)
	return s, nil
}

// cut is s cut to seeds from..from+n-1, which it holds.
func (s Sweep) cut(from uint64, n int) Sweep {
	c := Sweep{Failed: map[uint64]string{}, From: from, Seeds: n}
	for seed, g := range s.Failed {
		if seed >= from && seed < from+uint64(n) {
			c.Failed[seed] = g
		}
	}
	return c
}

// sweep runs the simulator bin's sweep of the stage's seeds, in dir. A
// sweep with failing seeds exits 1, which is no error here.
func sweep(ctx context.Context, dir, bin string, st stage, log io.Writer) (Sweep, error) {
	out, err := command(ctx, dir, bin, "sweep", "-from", strconv.FormatUint(st.from, 10), "-seeds", strconv.Itoa(st.n))
	fmt.Fprintf(log, "%s", out)
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			return Sweep{}, err
		}
	}
	return ParseSweep(string(out))
}

// Run applies m to a copy of the snapshot and runs the sweep of seeds
// 1..seeds on it, trying the seeds its patch records and seeds 1..first
// before (see stages). A seed that fails in base too (nil: no baseline)
// does not count. Commands' output goes to log.
func Run(ctx context.Context, snapshot string, m Mutation, seeds, first int, base *Baseline, log io.Writer) (Outcome, error) {
	out := Outcome{Mutation: m}
	dir, err := os.MkdirTemp("", "chronos-mutate-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "chronos-sim.bin")
	if out.Stale, err = Build(ctx, snapshot, m, "./cmd/chronos-sim", bin); err != nil || out.Stale != "" {
		return out, err
	}
	for _, st := range stages(m, seeds, first) {
		out.Sweep, err = sweep(ctx, dir, bin, st, log)
		if err != nil {
			return out, fmt.Errorf("sweep of %s: %w", m.Name, err)
		}
		out.Discounted = 0
		if base != nil && len(out.Sweep.Failed) > 0 {
			unmutated, err := base.Sweep(ctx, st.from, st.n, log)
			if err != nil {
				return out, err
			}
			for seed := range unmutated.Failed {
				if _, ok := out.Sweep.Failed[seed]; ok {
					delete(out.Sweep.Failed, seed)
					out.Discounted++
				}
			}
		}
		if len(out.Sweep.Failed) > 0 {
			break
		}
	}
	return out, nil
}

// Build applies m to a copy of the snapshot and builds the package pkg
// of the patched tree (for example "./cmd/chronos") into the file bin;
// a Mutation with no File builds the snapshot as it is. A patch that no
// longer applies or builds is no error: stale says why.
func Build(ctx context.Context, snapshot string, m Mutation, pkg, bin string) (stale string, err error) {
	dir, err := os.MkdirTemp("", "chronos-mutant-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := os.CopyFS(dir, os.DirFS(snapshot)); err != nil {
		return "", err
	}
	if m.File != "" {
		patch, err := filepath.Abs(m.File)
		if err != nil {
			return "", err
		}
		if b, err := command(ctx, dir, "git", "apply", patch); err != nil {
			return "patch does not apply: " + firstLine(b), nil
		}
	}
	if b, err := command(ctx, dir, "go", "build", "-o", bin, pkg); err != nil {
		return "does not build: " + firstLine(b), nil
	}
	return "", nil
}

// stage is one sweep Run tries: seeds from..from+n-1.
type stage struct {
	from uint64
	n    int
}

// stages are the sweeps Run tries in turn until one catches the
// mutation: each seed its patch records (within 1..seeds), then seeds
// 1..first, then 1..seeds. A mutation caught by a seed of the whole sweep
// is caught by the whole sweep: the audit then costs a fraction of the
// sweeps it stands for, and a recorded seed spares a whole sweep for the
// mutations that only a seed past the first ones catches. A change to the
// node or the workload that loses a recorded seed's catch costs only the
// time of the whole sweep. first 0 (or not below seeds) sweeps all seeds
// at once, and records are not tried, for the full counts.
func stages(m Mutation, seeds, first int) []stage {
	if first <= 0 || first >= seeds {
		return []stage{{1, seeds}}
	}
	var st []stage
	for _, seed := range m.Caught {
		if seed <= uint64(seeds) {
			st = append(st, stage{seed, 1})
		}
	}
	return append(st, stage{1, first}, stage{1, seeds})
}

// copyTracked copies the files git tracks under root into dir.
func copyTracked(ctx context.Context, root, dir string) error {
	list, err := command(ctx, root, "git", "ls-files", "-z")
	if err != nil {
		return fmt.Errorf("git ls-files: %v: %s", err, list)
	}
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		src, dst := filepath.Join(root, name), filepath.Join(dir, name)
		data, err := os.ReadFile(src)
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func command(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}
