package lifecycle

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// The protocol between a --daemon parent and the child it starts
// (Daemonize): the child finds the write end of a pipe at the descriptor
// daemonEnv names, writes daemonReady or daemonFailed and the error, and
// closes it. The parent reads until the pipe closes.
const (
	daemonEnv    = "CHRONOS_DAEMON_FD"
	daemonReady  = "ready\n"
	daemonFailed = "failed: "
	// maxDaemonReport bounds what the parent reads of the report.
	maxDaemonReport = 64 << 10
)

// daemonPipe is the child's end of the report pipe, found once.
var daemonPipe struct {
	once  sync.Once
	mu    sync.Mutex
	child bool     // this process is a daemon child
	f     *os.File // nil once reported
}

// findDaemonPipe takes the report pipe from the environment, once, and
// removes the variable so that nothing the process starts inherits it.
func findDaemonPipe() {
	daemonPipe.once.Do(func() {
		v, ok := os.LookupEnv(daemonEnv)
		if !ok {
			return
		}
		os.Unsetenv(daemonEnv)
		fd, err := strconv.Atoi(v)
		if err != nil || fd < 3 {
			return
		}
		daemonPipe.child = true
		daemonPipe.f = os.NewFile(uintptr(fd), "daemon report pipe")
	})
}

// DaemonChild reports whether this process is the background child a
// --daemon parent started (Daemonize).
func DaemonChild() bool {
	findDaemonPipe()
	daemonPipe.mu.Lock()
	defer daemonPipe.mu.Unlock()
	return daemonPipe.child
}

// DaemonStarted tells the waiting --daemon parent, if any, that the node
// serves (err nil) or failed to start with err. Only the first report is
// sent; in a process that is not a daemon child it does nothing.
func DaemonStarted(err error) {
	findDaemonPipe()
	daemonPipe.mu.Lock()
	defer daemonPipe.mu.Unlock()
	if daemonPipe.f == nil {
		return
	}
	msg := daemonReady
	if err != nil {
		msg = daemonFailed + strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
	}
	// Nothing to do if the parent is gone: it has stopped waiting.
	_, _ = daemonPipe.f.WriteString(msg)
	_ = daemonPipe.f.Close()
	daemonPipe.f = nil
}
