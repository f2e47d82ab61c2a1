package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
)

// The create baseline is a bare net/http server answering the creates as
// a node does (200 and a Location), measured twice in each run: in a
// process of its own, as each node is, which is the fair comparison and
// the ratio reported; and inside this tool's process, where it shares one
// Go runtime with the client, which spares it every wake-up across
// processes (the ratio the tool reported before; kept for comparison).

// bareServerEnv, set to "1", makes the tool's own binary serve as the
// bare server instead of running a measurement.
const bareServerEnv = "CHRONOS_LOAD_BARE_SERVER"

// bareHandler reads the body and answers 200 with a Location, as a node
// does.
func bareHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Location", "/timers/00000000000000000000000000000000")
		w.WriteHeader(http.StatusOK)
	})
}

// serveBareIfAsked serves the bare server, when the environment asks for
// it, until stdin closes, and then exits: the tool's main calls it first
// (and its tests' TestMain), so that the tool can start its own binary as
// the baseline's process.
func serveBareIfAsked() {
	if os.Getenv(bareServerEnv) != "1" {
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chronos-load bare server:", err)
		os.Exit(1)
	}
	fmt.Println(l.Addr().String())
	go func() { _ = http.Serve(l, bareHandler()) }()
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// bareProcess is the bare server running as a child process.
type bareProcess struct {
	addr  string
	cmd   *exec.Cmd
	stdin io.Closer
}

// startBareProcess starts this binary as the bare server on loopback and
// returns once it listens.
func startBareProcess() (*bareProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), bareServerEnv+"=1")
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
	p := &bareProcess{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	p.addr = strings.TrimSpace(line)
	if err != nil || !isLoopback(p.addr) {
		p.stop()
		return nil, fmt.Errorf("bare server process: address %q: %v", p.addr, err)
	}
	return p, nil
}

// stop ends the process: it exits when its stdin closes.
func (p *bareProcess) stop() {
	p.stdin.Close()
	_ = p.cmd.Wait()
}
