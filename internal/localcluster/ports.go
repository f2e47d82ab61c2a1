package localcluster

import (
	"errors"
	"fmt"
	"net"
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
// moment ago and that it has not returned before in this process. It
// holds them all until it returns, so that no two are the same.
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
		ln, err := net.Listen("tcp", Host+":0")
		if err != nil {
			return nil, fmt.Errorf("localcluster: free port: %w", err)
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
