// Package proctest serves the tests that start real chronos processes,
// through the process harness of internal/localcluster: it builds
// cmd/chronos once per test binary, starts nodes and clusters that are
// killed when the test ends (their logs shown if it failed), and hands
// out loopback addresses. Such tests are skipped under -short and where
// no Go toolchain is on PATH, each skip saying what would lift it; never
// because a port is taken.
//
// A test package that uses it calls Cleanup from its TestMain, after
// m.Run, to remove the binary.
package proctest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/localcluster"
)

// built is the binary the tests of one package share.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Chronos returns the path of cmd/chronos built for this test run,
// building it on first use.
func Chronos(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts chronos processes, which -short leaves out: run without -short (make test does)")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "chronos-test-"); built.err == nil {
			built.bin, built.err = localcluster.Build(context.Background(), built.dir)
		}
	})
	if errors.Is(built.err, exec.ErrNotFound) {
		t.Skip("go is not on PATH, so cmd/chronos cannot be built: install Go to run this test")
	}
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// Cleanup removes the binary Chronos built, if it built one.
func Cleanup() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// Start launches the process spec says and returns once it serves, within
// limit. The process is killed when the test ends, and its output shown
// if the test failed. An error that wraps localcluster.ErrPortTaken asks
// for another port (localcluster.OnFreeAddrs); a process that could not
// start at all fails the test.
func Start(t testing.TB, spec localcluster.Spec, limit time.Duration) (*localcluster.Proc, error) {
	t.Helper()
	p := Launch(t, spec)
	if err := p.AwaitReady(context.Background(), limit); err != nil {
		p.Kill()
		return nil, err
	}
	return p, nil
}

// Launch starts the process spec says without waiting for it to serve.
// The process is killed when the test ends, and its output shown if the
// test failed.
func Launch(t testing.TB, spec localcluster.Spec) *localcluster.Proc {
	t.Helper()
	p, err := localcluster.Launch(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill() // no-op once it has exited
		if t.Failed() {
			t.Logf("%s %s (pid %d) output:\n%s", spec.Name, spec.Addr, p.Pid(), p.Log())
		}
	})
	return p
}

// Cluster starts a local cluster of o's nodes on free loopback ports, in
// a folder of the test's, and returns once every node serves. The nodes
// are stopped when the test ends, and their output shown if it failed.
func Cluster(t testing.TB, o localcluster.Options) *localcluster.Cluster {
	t.Helper()
	o.Bin, o.Dir = Chronos(t), t.TempDir()
	c, err := localcluster.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Stop()
		if t.Failed() {
			for _, p := range c.Nodes() {
				t.Logf("%s %s (pid %d) output:\n%s", p.Name(), p.Addr(), p.Pid(), p.Log())
			}
		}
	})
	return c
}

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addrs, err := localcluster.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	return addrs[0]
}

// FreePorts returns the first of n consecutive loopback ports that were
// all free a moment ago, for a command that takes a base port and the
// ports after it (chronos cluster -base-port).
func FreePorts(t testing.TB, n int) int {
	t.Helper()
	base, err := localcluster.FreeRun(n)
	if err != nil {
		t.Fatal(err)
	}
	return base
}
