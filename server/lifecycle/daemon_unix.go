//go:build unix

package lifecycle

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/chronos-timer/chronos/server/config"
)

// DaemonStartTimeout bounds a --daemon parent's wait for its child to
// serve; a child that has not reported by then is killed.
const DaemonStartTimeout = 60 * time.Second

// Daemonize is --daemon: it starts this program again with args,
// detached in a session of its own, its stdin from /dev/null and its
// stdout and stderr into ErrLogFileName in cfg.LogFolder (/dev/null
// without one), and waits for it to report through an inherited pipe. It
// returns nil once the child serves, its pid file written; or the error
// the child reported, or the reason it never did, once the child has
// exited or been killed.
func Daemonize(cfg config.Node, args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("server: daemon: %w", err)
	}
	out, err := daemonOutput(cfg.LogFolder)
	if err != nil {
		return err
	}
	defer out.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("server: daemon: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(exe, args...)
	// The pipe is the child's first descriptor after stdin, stdout and
	// stderr.
	cmd.Env = append(os.Environ(), daemonEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("server: daemon: start: %w", err)
	}
	return waitStarted(cmd, r, DaemonStartTimeout)
}

// daemonOutput opens where the daemon's stdout and stderr go.
func daemonOutput(folder string) (*os.File, error) {
	if folder == "" {
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("server: daemon: %w", err)
		}
		return f, nil
	}
	return openLogFile(folder, ErrLogFileName)
}

// waitStarted waits, at most timeout, for the child's report on r and
// returns nil if it serves; otherwise it waits for the child to exit,
// killing it if it does not within timeout either, and returns why it
// did not start.
func waitStarted(cmd *exec.Cmd, r io.Reader, timeout time.Duration) error {
	report := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, maxDaemonReport))
		report <- string(b)
	}()
	exited := make(chan error, 1)
	var msg string
	select {
	case msg = <-report:
		if msg == daemonReady {
			// Not waited for: the child outlives this process.
			_ = cmd.Process.Release()
			return nil
		}
		go func() { exited <- cmd.Wait() }()
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		go func() { exited <- cmd.Wait() }()
		<-exited
		return fmt.Errorf("server: daemon (pid %d) did not start serving within %v; killed", cmd.Process.Pid, timeout)
	}
	var exitErr error
	select {
	case exitErr = <-exited:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		exitErr = fmt.Errorf("still running after %v; killed (%w)", timeout, <-exited)
	}
	why := strings.TrimSpace(strings.TrimPrefix(msg, daemonFailed))
	if why == "" {
		why = "exited without a report"
	}
	return fmt.Errorf("server: daemon (pid %d) failed to start: %s (%w)", cmd.Process.Pid, why, exitStatus(exitErr))
}

// exitStatus names a child's exit: its status, or the error waiting for
// it gave.
func exitStatus(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}
