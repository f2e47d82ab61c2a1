package localcluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// portAttempts bounds OnFreeAddrs: each attempt fails only if another
// process takes a port in the moment between the probe and the bind.
const portAttempts = 5

// handedOut is every port FreeAddrs returned in this process: it never
// returns one twice, so that two tests of one binary running side by side
// are not handed the same free port before either binds it (the kernel
// hands a port just closed out again soon). Another process may still
// take one: OnFreeAddrs starts again then.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// FreeAddrs returns n distinct loopback addresses whose ports were free a
// moment ago and that it has not returned before in this process, drawn
// below the kernel's ephemeral range where it can (listenFree). It holds
// them all until it returns, so that no two are the same.
func FreeAddrs(n int) ([]string, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	addrs := make([]string, 0, n)
	for len(addrs) < n {
		ln, err := listenFree()
		if err != nil {
			return nil, err
		}
		held = append(held, ln) // held, a port handed out before is not offered again now
		port := ln.Addr().(*net.TCPAddr).Port
		if handedOut.ports[port] {
			continue
		}
		handedOut.ports[port] = true
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// OnFreeAddrs calls try with n free loopback addresses, and again with
// new ones while it fails with ErrPortTaken: a port found free can be
// taken by another process before a node binds it, and then the nodes
// start again on other ports rather than the caller giving up. try must
// stop what it started before it returns an error.
func OnFreeAddrs(n int, try func(addrs []string) error) error {
	var err error
	for range portAttempts {
		var addrs []string
		if addrs, err = FreeAddrs(n); err != nil {
			return err
		}
		if err = try(addrs); !errors.Is(err, ErrPortTaken) {
			return err
		}
	}
	return fmt.Errorf("localcluster: %d attempts on fresh ports, each taken by another process: %w", portAttempts, err)
}

// FreeRun returns the first of n consecutive loopback ports that were all
// free a moment ago and that FreeAddrs has not handed out, for a command
// that takes a base port and the ports after it (chronos cluster
// -base-port).
func FreeRun(n int) (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for range maxRunTries {
		first, err := listenFree()
		if err != nil {
			return 0, err
		}
		base := first.Addr().(*net.TCPAddr).Port
		held := []net.Listener{first}
		for i := 1; i < n && base+i <= 65535 && !handedOut.ports[base+i]; i++ {
			ln, err := net.Listen("tcp", net.JoinHostPort(Host, strconv.Itoa(base+i)))
			if err != nil {
				break
			}
			held = append(held, ln)
		}
		for _, ln := range held {
			ln.Close()
		}
		if len(held) == n && !handedOut.ports[base] {
			for i := range n {
				handedOut.ports[base+i] = true
			}
			return base, nil
		}
	}
	return 0, fmt.Errorf("localcluster: no %d consecutive free loopback ports in %d tries", n, maxRunTries)
}

// maxRunTries bounds FreeRun's search for a run of free ports.
const maxRunTries = 100

// Where listenFree draws ports: below the kernel's ephemeral range, from
// quietLow up. A port of the ephemeral range that was free a moment ago
// is the next one the kernel may give any outgoing connection on the
// machine as its source port (a node's to its peers, a test's to a
// node), so one drawn there is taken, now and then, between the probe
// and the node's bind. Below the range only a process that binds that
// very port can take it.
const (
	quietLow   = 20000
	quietSpan  = 1024 // at least this many ports below the range, or ":0"
	quietTries = 64
)

// listenFree listens on a free loopback port, drawn below the ephemeral
// range when the kernel says where that range starts and leaves room
// under it, else on one the kernel picks.
func listenFree() (net.Listener, error) {
	if high := ephemeralLow() - 1; high-quietLow >= quietSpan {
		for range quietTries {
			port := quietLow + rand.IntN(high-quietLow+1)
			if ln, err := net.Listen("tcp", net.JoinHostPort(Host, strconv.Itoa(port))); err == nil {
				return ln, nil
			}
		}
	}
	ln, err := net.Listen("tcp", Host+":0")
	if err != nil {
		return nil, fmt.Errorf("localcluster: free port: %w", err)
	}
	return ln, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0
// where it does not say (not Linux).
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	low, err := strconv.Atoi(strings.Fields(string(data) + " x")[0])
	if err != nil {
		return 0
	}
	return low
}
