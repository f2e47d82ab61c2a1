package server

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chronos-timer/chronos/server/config"
)

// The adapter's tests load their configuration as cmd/chronos does; the
// configuration's own tests, with these helpers' twins, are in package
// config.

// writeFile writes content to dir/name and returns its path; dir "" means
// name is already a path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// noFiles are the flags that name no configuration file, so that a test
// never reads the machine's /etc, and keep the timers in memory, so that
// it writes no storage folder where it runs.
var noFiles = []string{"--local-config-file=", "--cluster-config-file=", "--shared-config-file=", "--dns-config-file=", "--storage-dir="}

// parseAndLoad parses args as cmd/chronos does and loads the
// configuration.
func parseAndLoad(args []string) (config.Node, error) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	var f config.Flags
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		return config.Node{}, err
	}
	return f.Load()
}
