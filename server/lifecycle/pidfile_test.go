//go:build unix

package lifecycle

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPIDFile proves the pid file's life: it holds this process's ID once
// created, a second process (here, a second lock) given the same path is
// refused while the first holds it, and remove deletes it, freeing the
// path for the next.
func TestPIDFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chronos.pid")
	p, err := CreatePIDFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != strconv.Itoa(os.Getpid())+"\n" {
		t.Fatalf("pid file holds %q, %v; want %d and a newline", data, err, os.Getpid())
	}
	if _, err := CreatePIDFile(path); err == nil || !strings.Contains(err.Error(), "another process holds this pid file") {
		t.Errorf("second pid file: error %v, want it refused as locked", err)
	}
	p.Remove(slog.New(slog.DiscardHandler))
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("pid file after remove: %v, want it gone", err)
	}
	again, err := CreatePIDFile(path)
	if err != nil {
		t.Fatalf("pid file after the first was removed: %v", err)
	}
	again.Remove(slog.New(slog.DiscardHandler))
	var none *PIDFile
	none.Remove(slog.New(slog.DiscardHandler))
	if p, err := CreatePIDFile(""); p != nil || err != nil {
		t.Errorf("CreatePIDFile(\"\") = %v, %v; want nothing", p, err)
	}
}

// TestPIDFileTakenOver proves that remove leaves a pid file that names
// another process: another instance took the path over.
func TestPIDFileTakenOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chronos.pid")
	p, err := CreatePIDFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	p.Remove(slog.New(slog.NewTextHandler(&logs, nil)))
	if data, err := os.ReadFile(path); err != nil || string(data) != "1\n" {
		t.Errorf("pid file %q, %v; want the other process's left in place", data, err)
	}
	if !strings.Contains(logs.String(), "pid file no longer names this process") {
		t.Errorf("log %q, want a warning", logs.String())
	}
}
