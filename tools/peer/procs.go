package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// The tool starts its own binary in a role: the asynq worker or the bare
// net/http server, each a process of its own as a Chronos node is.
const (
	roleEnv         = "PEER_ROLE"
	redisEnv        = "PEER_REDIS"
	workersEnv      = "PEER_WORKERS"
	delayedCheckEnv = "PEER_DELAYED_CHECK"
	taskCheckEnv    = "PEER_TASK_CHECK"
)

// taskType is the asynq task type of a timer.
const taskType = "timer:pop"

// serveRoleIfAsked serves the role the environment names, until stdin
// closes, and then exits; main calls it first.
func serveRoleIfAsked() {
	var err error
	switch os.Getenv(roleEnv) {
	case "":
		return
	case "worker":
		err = serveWorker()
	case "bare":
		err = serveBare()
	default:
		err = fmt.Errorf("unknown role %q", os.Getenv(roleEnv))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer", os.Getenv(roleEnv)+":", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serveWorker runs the asynq server: each task POSTs its opaque to its
// callback URI (payload "uri\nopaque") and fails, to be retried, unless
// the answer is a 2xx, as a Chronos callback does.
func serveWorker() error {
	workers, _ := strconv.Atoi(os.Getenv(workersEnv))
	delayed, _ := time.ParseDuration(os.Getenv(delayedCheckEnv))
	check, _ := time.ParseDuration(os.Getenv(taskCheckEnv))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		MaxIdleConns: workers, MaxIdleConnsPerHost: workers,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
	srv := asynq.NewServer(asynq.RedisClientOpt{Addr: os.Getenv(redisEnv), PoolSize: workers + 8}, asynq.Config{
		Concurrency: workers, DelayedTaskCheckInterval: delayed, TaskCheckInterval: check,
		LogLevel: asynq.WarnLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(taskType, func(ctx context.Context, t *asynq.Task) error {
		uri, opaque, _ := strings.Cut(string(t.Payload()), "\n")
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, uri, strings.NewReader(opaque))
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("callback: %s", resp.Status)
		}
		return nil
	})
	if err := srv.Start(mux); err != nil {
		return err
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Shutdown()
	return nil
}

// serveBare is chronos-load's baseline: a bare net/http server that reads
// each body and answers 200 with a Location, as a node does.
func serveBare() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(l.Addr().String())
	go func() {
		_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Location", "/timers/00000000000000000000000000000000")
			w.WriteHeader(http.StatusOK)
		}))
	}()
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// child is the tool's own binary running in a role.
type child struct {
	cmd   *exec.Cmd
	stdin io.Closer
	line  string // the first line it printed
}

func startChild(role string, env ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(append(os.Environ(), roleEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	c.line = strings.TrimSpace(line)
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("%s process: %v", role, err)
	}
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// stop ends the process: it exits when its stdin closes.
func (c *child) stop() {
	c.stdin.Close()
	_ = c.cmd.Wait()
}

// redisServer is redis-server on a loopback port of its own, in a
// temporary folder, with an append-only file.
type redisServer struct {
	cmd  *exec.Cmd
	dir  string
	addr string
}

func startRedis(bin, fsync string) (*redisServer, error) {
	dir, err := os.MkdirTemp("", "chronos-peer-redis-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", port, "--dir", dir,
		"--appendonly", "yes", "--appendfsync", fsync, "--save", "", "--daemonize", "no",
		"--protected-mode", "yes", "--logfile", dir+"/redis.log")
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &redisServer{cmd: cmd, dir: dir, addr: "127.0.0.1:" + port}
	rc := redis.NewClient(&redis.Options{Addr: r.addr})
	defer rc.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if rc.Ping(context.Background()).Err() == nil {
			return r, nil
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(dir + "/redis.log")
			r.stop()
			return nil, fmt.Errorf("redis-server on %s did not answer within 10 s: %s", r.addr, log)
		}
	}
}

func (r *redisServer) pid() int { return r.cmd.Process.Pid }

func (r *redisServer) stop() {
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	os.RemoveAll(r.dir)
}

// rss is a process's resident memory in bytes.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on
// Linux).
const clockTick = 10 * time.Millisecond

// cpu is a process's user and system time so far.
func cpu(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	// Fields 14 and 15 of the line, utime and stime; rest starts at 3.
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * clockTick
}

// loadavg is /proc/loadavg's three averages.
func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
