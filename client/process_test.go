//go:build unix

// The cluster tests kill nodes with SIGKILL, so they exist only where it
// does.

package client_test

import (
	"os"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/internal/localcluster"
	"github.com/chronos-timer/chronos/internal/proctest"
)

// processWait bounds every wait on a process: a ceiling against hangs,
// never a measured timing.
const processWait = 20 * time.Second

func TestMain(m *testing.M) {
	code := m.Run()
	proctest.Cleanup()
	os.Exit(code)
}

// process is a running chronos node.
type process struct {
	addr string
	proc *localcluster.Proc
}

// kill stops the process with SIGKILL and waits until it is gone.
func (p *process) kill(*testing.T) { p.proc.Kill() }

// startCluster starts n chronos processes as one cluster on free loopback
// ports, configured with INI files as an operator would (addresses and a
// key only: each node derives its instance number), and waits until each
// serves.
func startCluster(t *testing.T, n int) []*process {
	t.Helper()
	c := proctest.Cluster(t, localcluster.Options{Nodes: n, LogLevel: 3})
	var members []*process
	for _, p := range c.Nodes() {
		members = append(members, &process{addr: p.Addr(), proc: p})
	}
	return members
}
