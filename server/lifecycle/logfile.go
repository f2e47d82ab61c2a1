package lifecycle

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/chronos-timer/chronos/server/config"
)

// The files the node writes in the [logging] folder. The original writes
// hourly files behind a chronos_current.txt link and cleans up files
// starting "chronos_"; this one file has a stable name outside that
// pattern and is never rotated by the node: rotate it with logrotate's
// copytruncate (it is written in append mode).
const (
	// ErrLogFileName receives what a daemon writes to stderr, a crash's
	// stack trace included, as the original's chronos_err.log does.
	ErrLogFileName = "chronos_err.log"
)

// logFileMode is the mode a log file is created with: the node's own
// group may read it.
const logFileMode = 0o640

// OpenLog returns the node's logger, at cfg.LogLevel (kept in cfg.Level,
// if set, so that a reload may change it) and in cfg.LogFormat: into
// config.LogFileName in cfg.LogFolder, if set, and to stderr unless this process
// is a daemon (DaemonChild), whose stderr is ErrLogFileName. closeLog
// closes the file.
func OpenLog(cfg config.Node, stderr io.Writer) (log *slog.Logger, closeLog func() error, err error) {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.Level != nil {
		cfg.Level.Set(cfg.LogLevel)
		opts.Level = cfg.Level
	}
	handler := func(w io.Writer) slog.Handler {
		if cfg.LogFormat == config.LogJSON {
			return slog.NewJSONHandler(w, opts)
		}
		return slog.NewTextHandler(w, opts)
	}
	var handlers []slog.Handler
	closeLog = func() error { return nil }
	if cfg.LogFolder != "" {
		f, err := openLogFile(cfg.LogFolder, config.LogFileName)
		if err != nil {
			return nil, nil, err
		}
		handlers = append(handlers, handler(f))
		closeLog = f.Close
	}
	if !DaemonChild() || len(handlers) == 0 {
		handlers = append(handlers, handler(stderr))
	}
	if len(handlers) == 1 {
		return slog.New(handlers[0]), closeLog, nil
	}
	return slog.New(slog.NewMultiHandler(handlers...)), closeLog, nil
}

// openLogFile opens name in folder for appending, creating the folder and
// the file if need be.
func openLogFile(folder, name string) (*os.File, error) {
	if err := os.MkdirAll(folder, 0o750); err != nil {
		return nil, fmt.Errorf("server: log folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(folder, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, logFileMode)
	if err != nil {
		return nil, fmt.Errorf("server: log file: %w", err)
	}
	return f, nil
}
