package server

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestConfigurationDocNamesEveryKey proves that docs/configuration.md
// names, in its table of what is read, every section and key this
// implementation reads and every key of the original it ignores, so that
// a new key cannot go undocumented.
func TestConfigurationDocNamesEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	// The table's rows: | `[section]` | `key`, `key` | ...
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `\\[([a-z]+)\\]`[^|]*\\| ([^|]*)\\|").FindAllStringSubmatch(string(doc), -1) {
		rows[m[1]] += m[2]
	}
	for _, keys := range []map[string][]string{readKeys, originalKeys} {
		for section, ks := range keys {
			row, ok := rows[section]
			if !ok {
				t.Errorf("docs/configuration.md has no row for [%s]", section)
				continue
			}
			for _, k := range ks {
				if !strings.Contains(row, "`"+k+"`") {
					t.Errorf("docs/configuration.md does not name [%s] %s", section, k)
				}
			}
		}
	}
}
