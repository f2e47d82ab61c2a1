package sim

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// bugRow is a row of the bug table in scenarios/README.md: its reference
// (N12, C7, U30, ...) in the first cell.
var bugRow = regexp.MustCompile(`(?m)^\| ([A-Z][0-9]+) \|`)

// TestBugTableNamesEachProblemOnce keeps the references that pinned seeds,
// mutations and comments use unambiguous: each row of the bug table has a
// reference of its own, and every pinned seed names a row.
func TestBugTableNamesEachProblemOnce(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "scenarios", "README.md"))
	require.NoError(t, err)
	rows := map[string]int{}
	for _, m := range bugRow.FindAllStringSubmatch(string(readme), -1) {
		rows[m[1]]++
	}
	require.NotEmpty(t, rows, "no rows found in the bug table")
	for ref, n := range rows {
		require.Equalf(t, 1, n, "bug table: %d rows are named %s", n, ref)
	}

	known, err := ReadKnownFailing(filepath.Join("..", KnownFailingFile))
	require.NoError(t, err)
	for seed, bug := range known {
		require.Containsf(t, rows, bug.Ref, "seed %d is pinned to %s, which the bug table has no row for", seed, bug.Ref)
	}
}
