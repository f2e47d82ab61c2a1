package main

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/chronos-timer/chronos/server/config"
)

// TestConfigurationDocNamesEveryFlag proves that docs/configuration.md
// names every flag of the node (as --name) and of `chronos cluster` (as
// -name), so that a new flag cannot go undocumented.
func TestConfigurationDocNamesEveryFlag(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	node := flag.NewFlagSet("chronos", flag.ContinueOnError)
	var flags config.Flags
	flags.Register(node)
	node.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(string(doc), "`--"+f.Name) {
			t.Errorf("docs/configuration.md does not name the flag --%s", f.Name)
		}
	})
	cluster, _ := clusterFlags(io.Discard)
	cluster.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(string(doc), "`-"+f.Name) {
			t.Errorf("docs/configuration.md does not name chronos cluster's flag -%s", f.Name)
		}
	})
}
