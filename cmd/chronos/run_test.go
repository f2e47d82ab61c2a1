package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunExitCodes proves main's contract with its caller for what never
// reaches the server: help exits 0, bad flags, stray arguments and invalid
// or unreadable configuration exit 2, with --daemon too (the parent checks
// the configuration before it starts anything).
func TestRunExitCodes(t *testing.T) {
	badConf := filepath.Join(t.TempDir(), "chronos.conf")
	if err := os.WriteFile(badConf, []byte("[http]\nbind-port = none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badDNS := filepath.Join(t.TempDir(), "dns.json")
	if err := os.WriteFile(badDNS, []byte(`{"hostnames": [{"name": "a"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"-h"}, 0},
		{"bad flag value", []string{"--bind-port", "x"}, 2},
		{"unknown flag", []string{"--no-such-flag"}, 2},
		{"stray argument", []string{"serve"}, 2},
		{"invalid file", []string{"--local-config-file", badConf}, 2},
		{"unreadable file", []string{"--cluster-config-file", t.TempDir()}, 2},
		{"daemon with an invalid file", []string{"--daemon", "--pidfile", filepath.Join(t.TempDir(), "pid"), "--local-config-file", badConf}, 2},
		{"invalid DNS file", []string{"--dns-config-file", badDNS}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			if got := run(append(noFiles, tt.args...), &stderr); got != tt.want {
				t.Errorf("run(%q) = %d, want %d\n%s", tt.args, got, tt.want, stderr.String())
			}
		})
	}
}

// TestRunNeverPrintsClusterKey proves that a refused --cluster-key exits 2
// with an error naming the flag but not the key, although the flag package
// prints the values it refuses.
func TestRunNeverPrintsClusterKey(t *testing.T) {
	var stderr strings.Builder
	if got := run(append(noFiles, "--cluster-key", "open-sesame"), &stderr); got != 2 {
		t.Errorf("run = %d, want 2\n%s", got, stderr.String())
	}
	if out := stderr.String(); !strings.Contains(out, "--cluster-key is 11 bytes") || strings.Contains(out, "sesame") {
		t.Errorf("stderr = %q, want the length error without the key", out)
	}
}

// noFiles are the flags that name no configuration file, so that a test
// never reads the machine's /etc, and keep the timers in memory, so that
// it writes no storage folder where it runs; a test's own flags come
// after and override them.
var noFiles = []string{"--local-config-file=", "--cluster-config-file=", "--shared-config-file=", "--dns-config-file=", "--storage-dir="}
