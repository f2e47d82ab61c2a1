package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/internal/localcluster"
)

// Bounds of the waits on the started nodes: ceilings against a node that
// hangs, not timings.
const (
	startLimit   = 20 * time.Second
	restartLimit = 60 * time.Second
)

// cluster is a local cluster of chronos processes on loopback, run by the
// process harness.
type cluster struct {
	*localcluster.Cluster
}

// startCluster starts n chronos processes from bin on free loopback
// ports, with one generated cluster key, and waits until each serves.
// Each process logs to a file in its folder, under the cluster's. A
// memory limit or a GC headroom other than "" goes into each node's
// [limits] memory_limit or gc_headroom; with storage each keeps its timers in its folder, else
// in memory; pprof gives each a free loopback address to serve its
// profiles on ([debug] pprof_address), in the order of pprof's result,
// and as many more to the join nodes that may join it later.
func startCluster(bin string, n, join int, memoryLimit, gcHeadroom string, storage, profiles bool) (c *cluster, pprof []string, err error) {
	dir, err := os.MkdirTemp("", "chronos-load-")
	if err != nil {
		return nil, nil, err
	}
	if profiles {
		if pprof, err = localcluster.FreeAddrs(n + join); err != nil {
			return nil, nil, err
		}
	}
	o := localcluster.Options{Nodes: n, Bin: bin, Dir: dir, InMemory: !storage}
	o.NodeConf = func(i int, _ []string) string {
		var conf string
		if memoryLimit != "" || gcHeadroom != "" {
			conf += "[limits]\n"
		}
		if memoryLimit != "" {
			conf += "memory_limit = " + memoryLimit + "\n"
		}
		if gcHeadroom != "" {
			conf += "gc_headroom = " + gcHeadroom + "\n"
		}
		if pprof != nil {
			conf += "[debug]\npprof_address = " + pprof[i] + "\n"
		}
		return conf
	}
	ctx, cancel := context.WithTimeout(context.Background(), startLimit)
	defer cancel()
	lc, err := localcluster.Start(ctx, o)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return &cluster{lc}, pprof, nil
}

// kill ends node i with SIGKILL, as a power cut would, and waits for it.
func (c *cluster) kill(i int) { c.Nodes()[i].Kill() }

// restart starts node i again on its files and waits until it serves.
func (c *cluster) restart(i int) error {
	return c.Restart(context.Background(), i, restartLimit)
}

// stop ends the processes (SIGTERM, then SIGKILL after a bound) and
// removes the cluster's folder, unless the run failed: the error names
// the folder, whose logs say why.
func (c *cluster) stop(failed bool) {
	_ = c.Stop()
	if !failed {
		os.RemoveAll(c.Dir())
	}
}

// pids lists the processes, in address order.
func (c *cluster) pids() []int {
	var out []int
	for _, p := range c.Nodes() {
		out = append(out, p.Pid())
	}
	return out
}

// buildChronos builds cmd/chronos into dir.
func buildChronos(dir string) (string, error) {
	return localcluster.Build(context.Background(), dir)
}

// rss returns a process's resident set size in bytes (Linux /proc).
func rss(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on
// Linux).
const clockTick = 10 * time.Millisecond

// cpuTime is a process's user and system time so far, read from
// /proc/<pid>/stat (its 14th and 15th fields).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseCPU(string(b))
}

// parseCPU reads utime and stime from a /proc/<pid>/stat line; the
// command name, in parentheses, may hold spaces.
func parseCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat %q: no command name", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("stat %q: too few fields", stat)
	}
	// f[0] is the 3rd field (state): utime and stime are f[11], f[12].
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("stat %q: utime or stime not a number", stat)
	}
	return time.Duration(u+s) * clockTick, nil
}

// isLoopback reports whether host:port names a loopback address. Names
// are refused: the tool sends to addresses it can check without a lookup.
func isLoopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
