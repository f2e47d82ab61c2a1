// Package proctest serves the tests that start real chronos processes: it
// builds cmd/chronos once per test binary and hands out loopback
// addresses. Such tests are skipped under -short and where no Go
// toolchain is on PATH, each skip saying what would lift it.
//
// A test package that uses it calls Cleanup from its TestMain, after
// m.Run, to remove the binary.
package proctest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// built is the binary the tests of one package share.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Chronos returns the path of cmd/chronos built for this test run,
// building it on first use.
func Chronos(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts chronos processes, which -short leaves out: run without -short (make test does)")
	}
	built.once.Do(func() { built.bin, built.err = build() })
	if errors.Is(built.err, exec.ErrNotFound) {
		t.Skip("go is not on PATH, so cmd/chronos cannot be built: install Go to run this test")
	}
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func build() (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	if built.dir, err = os.MkdirTemp("", "chronos-test-"); err != nil {
		return "", err
	}
	bin := filepath.Join(built.dir, "chronos")
	if out, err := exec.Command(goTool, "build", "-o", bin, "github.com/chronos-timer/chronos/cmd/chronos").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// Cleanup removes the binary Chronos built, if it built one.
func Cleanup() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// maxPortTries bounds FreePorts' search for a run of free ports.
const maxPortTries = 100

// FreePorts returns the first of n consecutive loopback ports that were
// all free a moment ago, for a command that takes a base port and the
// ports after it (chronos cluster -base-port).
func FreePorts(t testing.TB, n int) int {
	t.Helper()
	for range maxPortTries {
		first, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := first.Addr().(*net.TCPAddr).Port
		held := []net.Listener{first}
		for i := 1; i < n && base+i <= 65535; i++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i)))
			if err != nil {
				break
			}
			held = append(held, ln)
		}
		for _, ln := range held {
			ln.Close()
		}
		if len(held) == n {
			return base
		}
	}
	t.Fatalf("found no %d consecutive free loopback ports in %d tries", n, maxPortTries)
	return 0
}
