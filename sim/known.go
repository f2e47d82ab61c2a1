package sim

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// KnownFailingFile is where, under the repository root, seeds are pinned
// that fail because of known, reported problems (scenarios/README.md): one
// "<seed> <guarantee> <bug ref>" a line, # starting a comment.
const KnownFailingFile = "scenarios/known-failing-seeds.txt"

// KnownBug is why a pinned seed fails: the guarantee it breaks first (or
// "panic", "unmet") and the reference of the problem.
type KnownBug struct{ Kind, Ref string }

// ReadKnownFailing reads a file of pinned seeds. A missing file pins
// nothing.
func ReadKnownFailing(path string) (map[uint64]KnownBug, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[uint64]KnownBug{}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseKnownFailing(string(data), path)
}

// ParseKnownFailing parses the text of a file of pinned seeds; name is
// used in errors.
func ParseKnownFailing(text, name string) (map[uint64]KnownBug, error) {
	known := map[uint64]KnownBug{}
	for i, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		seed, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || len(f) < 3 {
			return nil, fmt.Errorf("%s:%d: want <seed> <guarantee> <bug ref>", name, i+1)
		}
		known[seed] = KnownBug{f[1], strings.Join(f[2:], " ")}
	}
	return known, nil
}
