package server

import (
	"log/slog"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/config"
)

// TestApplyMemoryLimit proves that Run's helper sets the runtime's soft
// memory limit, and that 0 leaves it alone. It restores the limit.
func TestApplyMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	applyMemoryLimit(0, slog.New(slog.DiscardHandler))
	if got := debug.SetMemoryLimit(-1); got != prev {
		t.Fatalf("limit 0: runtime limit %d, want it left at %d", got, prev)
	}
	applyMemoryLimit(3<<30, slog.New(slog.DiscardHandler))
	if got := debug.SetMemoryLimit(-1); got != 3<<30 {
		t.Fatalf("runtime limit %d, want %d", got, int64(3<<30))
	}
}

// TestNodeConfig proves that the settings the node enforces reach it: the
// cluster key, the callback-host allow-list and a seed of its own, and
// that a hand-built allow-list is validated before the node sees it.
func TestNodeConfig(t *testing.T) {
	cfg := config.Default()
	cfg.Localhost = "127.0.0.1:7253"
	cfg.ClusterKey = "0123456789abcdef"
	cfg.CallbackHosts = []string{"127.0.0.0/8", "[::1]:8080"}
	nc := nodeConfig(cfg, nil, nil, nil)
	if nc.ClusterKey != cfg.ClusterKey || !reflect.DeepEqual(nc.CallbackHosts, cfg.CallbackHosts) {
		t.Errorf("node config has key %v and hosts %q, want the key and %q", nc.ClusterKey == cfg.ClusterKey, nc.CallbackHosts, cfg.CallbackHosts)
	}
	// The seed is the operating system's, a fresh one for each node: a
	// seed of 0, or one shared, keys every node's ID index alike
	// (node.Store.KeyIndex) and puts their jitter in step.
	if other := nodeConfig(cfg, nil, nil, nil); nc.Seed == 0 || nc.Seed == other.Seed {
		t.Errorf("node seeds %#x and %#x, want two fresh ones", nc.Seed, other.Seed)
	}
	cfg.CallbackHosts = []string{"cb.example", "cb example"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `allowed_host "cb example"`) {
		t.Errorf("Validate() = %v, want one naming allowed_host \"cb example\"", err)
	}
}

// TestReplicateAcrossSites proves that the node is given the remote sites
// only when replication across sites is on: off, it forwards nothing to
// them.
func TestReplicateAcrossSites(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := config.Default()
		cfg.Localhost = "127.0.0.1:7253"
		cfg.RemoteSites = []node.Site{{Name: "b", Address: "10.9.0.1:7253"}}
		cfg.ReplicateAcrossSites = on
		nc := nodeConfig(cfg, nil, nil, nil)
		if got := len(nc.RemoteSites) > 0; got != on {
			t.Errorf("replicate %v: node has remote sites %v, want %v", on, nc.RemoteSites, on)
		}
		if nc.LocalSite != cfg.LocalSite {
			t.Errorf("replicate %v: node's local site %q, want %q", on, nc.LocalSite, cfg.LocalSite)
		}
	}
}
