package lifecycle

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chronos-timer/chronos/server/config"
)

// TestOpenLog proves where the log goes: with a [logging] folder, into
// config.LogFileName there (the folder created if need be, the file appended
// to, never truncated) and to stderr too, since this process is not a
// daemon; without one, to stderr only.
func TestOpenLog(t *testing.T) {
	folder := filepath.Join(t.TempDir(), "log", "chronos")
	cfg := config.Default()
	cfg.LogFolder = folder
	for _, msg := range []string{"first", "second"} {
		var stderr strings.Builder
		log, closeLog, err := OpenLog(cfg, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		log.Info(msg)
		log.Debug("below the level")
		if err := closeLog(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stderr.String(), "msg="+msg) {
			t.Errorf("stderr %q lacks msg=%s", stderr.String(), msg)
		}
	}
	data, err := os.ReadFile(filepath.Join(folder, config.LogFileName))
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	if !strings.Contains(got, "msg=first") || !strings.Contains(got, "msg=second") || strings.Contains(got, "below the level") {
		t.Errorf("log file %q, want both records at info and none below", got)
	}

	var stderr strings.Builder
	log, closeLog, err := OpenLog(config.Default(), &stderr)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("alone")
	closeLog()
	if !strings.Contains(stderr.String(), "msg=alone") {
		t.Errorf("stderr %q lacks msg=alone", stderr.String())
	}
}

// TestOpenLogFolderRefused proves that a log folder that cannot be made is
// an error naming it, not a silently lost log.
func TestOpenLogFolderRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-folder")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.LogFolder = filepath.Join(file, "sub")
	if _, _, err := OpenLog(cfg, new(strings.Builder)); err == nil || !strings.Contains(err.Error(), "server: log folder") {
		t.Errorf("error = %v, want one about the log folder", err)
	}
}

// TestOpenLogJSON proves [logging] format = json writes one JSON object
// per line with the fixed keys.
func TestOpenLogJSON(t *testing.T) {
	cfg := config.Default()
	cfg.LogFormat = config.LogJSON
	var out bytes.Buffer
	log, closeLog, err := OpenLog(cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLog()
	log.Info("hello", "node", "127.0.0.1:7253", "timer", "0123")
	var rec map[string]any
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil || rec["msg"] != "hello" || rec["node"] != "127.0.0.1:7253" || rec["level"] != "INFO" {
		t.Fatalf("line %q (%v), want a JSON record of hello at INFO", out.String(), err)
	}
}
