package config

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var rewriteDoc = flag.Bool("rewrite", false, "rewrite the settings tables of docs/configuration.md from the table")

// configDoc is the page whose tables come from the settings table.
const configDoc = "../../docs/configuration.md"

// The marks around each generated table in configDoc.
const (
	flagsBegin = "<!-- the flags of the settings table (server/config/settings.go); go test ./server/config -run TestConfigurationDoc -rewrite -->\n"
	keysBegin  = "<!-- the keys of the settings table (server/config/settings.go); go test ./server/config -run TestConfigurationDoc -rewrite -->\n"
	tableEnd   = "<!-- end of the generated table -->\n"
)

// TestConfigurationDoc proves that the tables of docs/configuration.md
// that list the flags and the keys of the files are the ones the settings
// table gives, row for row, so that a setting cannot go undocumented and a
// documented one cannot drift from the code. -rewrite writes them.
func TestConfigurationDoc(t *testing.T) {
	data, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, g := range []struct {
		begin, table string
	}{{flagsBegin, flagsTable()}, {keysBegin, keysTable()}} {
		i := strings.Index(doc, g.begin)
		j := strings.Index(doc[max(i, 0):], tableEnd)
		if i < 0 || j < 0 {
			t.Fatalf("%s has no %q ... %q", configDoc, g.begin, tableEnd)
		}
		at, end := i+len(g.begin), i+j
		if got := doc[at:end]; got != g.table {
			if !*rewriteDoc {
				t.Errorf("%s differs from the settings table; go test ./server/config -run TestConfigurationDoc -rewrite gives:\n%s", configDoc, g.table)
				continue
			}
			doc = doc[:at] + g.table + doc[end:]
		}
	}
	if *rewriteDoc && doc != string(data) {
		if err := os.WriteFile(configDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// flagsTable is the docs' table of the flags that give a setting.
func flagsTable() string {
	var b strings.Builder
	b.WriteString("| flag | the setting | default |\n| --- | --- | --- |\n")
	for _, s := range table {
		if s.flag == "" {
			continue
		}
		fmt.Fprintf(&b, "| `--%s <%s>` | `[%s] %s` | %s |\n", s.flag, placeholder(s.usage), s.section, s.key, s.byDefault)
		if s.fileFlag != "" {
			fmt.Fprintf(&b, "| `--%s <%s>` | `[%s] %s`, read from the file | none |\n", s.fileFlag, placeholder(s.fileUsage), s.section, s.key)
		}
	}
	return b.String()
}

// placeholder is the word a flag's usage quotes in backquotes, as
// flag.PrintDefaults shows it.
func placeholder(usage string) string {
	_, rest, _ := strings.Cut(usage, "`")
	word, _, _ := strings.Cut(rest, "`")
	return word
}

// keysTable is the docs' table of the keys of the files: the table's, and
// after each section's the original's keys not used here.
func keysTable() string {
	var b strings.Builder
	b.WriteString("| section | key | here | default |\n| --- | --- | --- | --- |\n")
	done := map[string]bool{}
	writeOriginal := func(section string) {
		for _, o := range originals {
			if o.section == section && !done[section] {
				why := "ignored with a warning"
				if o.why != "" {
					why += ": " + o.why
				}
				fmt.Fprintf(&b, "| `[%s]` | `%s` | %s | |\n", o.section, strings.Join(o.keys, "`, `"), why)
			}
		}
		done[section] = true
	}
	for i, s := range table {
		fmt.Fprintf(&b, "| `[%s]` | `%s` | %s | %s |\n", s.section, s.key, s.what, s.byDefault)
		if i+1 == len(table) || table[i+1].section != s.section {
			writeOriginal(s.section)
		}
	}
	for _, o := range originals {
		writeOriginal(o.section)
	}
	return b.String()
}
