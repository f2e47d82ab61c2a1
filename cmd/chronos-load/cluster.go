package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cluster is a local cluster of chronos processes on loopback.
type cluster struct {
	dir   string
	addrs []string
	cmds  []*exec.Cmd
	// args are each node's command line, to start it again (restart).
	bin  string
	args [][]string
}

// startCluster starts n chronos processes from bin on free loopback
// ports, with one generated cluster key, and waits until each answers
// /ping. Each process logs to a file in the cluster's folder. A memory
// limit other than "" goes into each node's [limits] memory_limit; with
// storage each keeps its timers in the cluster's folder, else in memory.
func startCluster(bin string, n int, memoryLimit string, storage bool) (*cluster, error) {
	dir, err := os.MkdirTemp("", "chronos-load-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, bin: bin}
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	for range n {
		addr, err := freeLoopbackAddr()
		if err != nil {
			c.stop()
			return nil, err
		}
		c.addrs = append(c.addrs, addr)
	}
	for i, addr := range c.addrs {
		host, port, _ := net.SplitHostPort(addr)
		local := filepath.Join(dir, fmt.Sprintf("chronos-%d.conf", i+1))
		clusterFile := filepath.Join(dir, fmt.Sprintf("chronos_cluster-%d.conf", i+1))
		var b strings.Builder
		fmt.Fprintf(&b, "[cluster]\nlocalhost = %s\n", addr)
		for _, a := range c.addrs {
			fmt.Fprintf(&b, "node = %s\n", a)
		}
		fmt.Fprintf(&b, "key = %s\n", hex.EncodeToString(key))
		conf := fmt.Appendf(nil, "[http]\nbind-address = %s\nbind-port = %s\n\n[logging]\nlevel = 2\n", host, port)
		if memoryLimit != "" {
			conf = fmt.Appendf(conf, "\n[limits]\nmemory_limit = %s\n", memoryLimit)
		}
		if err := os.WriteFile(local, conf, 0o600); err != nil {
			c.stop()
			return nil, err
		}
		if err := os.WriteFile(clusterFile, []byte(b.String()), 0o600); err != nil {
			c.stop()
			return nil, err
		}
		// Only these files: never the machine's /etc/chronos or dns.json.
		args := []string{"--local-config-file", local, "--cluster-config-file", clusterFile,
			"--shared-config-file=", "--dns-config-file=", "--storage-dir="}
		if storage {
			args[len(args)-1] += filepath.Join(dir, "data")
		}
		c.args = append(c.args, args)
		c.cmds = append(c.cmds, nil)
		if err := c.launch(i); err != nil {
			c.stop()
			return nil, err
		}
	}
	for _, addr := range c.addrs {
		if err := waitServing(addr, 20*time.Second); err != nil {
			c.stop()
			return nil, fmt.Errorf("%v (logs in %s)", err, dir)
		}
	}
	return c, nil
}

// launch starts node i, its output appended to its log file.
func (c *cluster) launch(i int) error {
	logFile, err := os.OpenFile(filepath.Join(c.dir, fmt.Sprintf("chronos-%d.log", i+1)), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(c.bin, c.args[i]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	c.cmds[i] = cmd
	return nil
}

// kill ends node i with SIGKILL, as a power cut would, and waits for it.
func (c *cluster) kill(i int) {
	_ = c.cmds[i].Process.Kill()
	_ = c.cmds[i].Wait()
}

// restart starts node i again on its files and waits until it serves.
func (c *cluster) restart(i int) error {
	if err := c.launch(i); err != nil {
		return err
	}
	return waitServing(c.addrs[i], 60*time.Second)
}

// stop ends the processes (SIGTERM, then SIGKILL after 5 s) and removes
// the cluster's folder.
func (c *cluster) stop() {
	for _, cmd := range c.cmds {
		if cmd != nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, cmd := range c.cmds {
		if cmd == nil {
			continue
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(c.dir)
}

// pids lists the processes, in address order.
func (c *cluster) pids() []int {
	out := make([]int, len(c.cmds))
	for i, cmd := range c.cmds {
		out[i] = cmd.Process.Pid
	}
	return out
}

// buildChronos builds cmd/chronos into dir.
func buildChronos(dir string) (string, error) {
	bin := filepath.Join(dir, "chronos")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/chronos-timer/chronos/cmd/chronos").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/chronos: %v\n%s", err, out)
	}
	return bin, nil
}

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitServing polls addr's /ping until it answers 200. Polling a process
// that is starting is the one wait here; it is bounded.
func waitServing(addr string, limit time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if resp, err := client.Get("http://" + addr + "/ping"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not serve /ping within %v", addr, limit)
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
