//go:build linux

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsDir is where named network namespaces are bound, as `ip netns`
// keeps them.
const netnsDir = "/run/netns"

// namespace is one network namespace the nemesis made: its name, a
// handle to it, and the TAP device inside it, whose other end the
// switch holds.
type namespace struct {
	name string
	ns   netns.NsHandle
	tap  *os.File
}

// Supported reports whether this process can make network namespaces
// and TAP devices, and if not, why: the nemesis needs root (or
// CAP_NET_ADMIN and CAP_SYS_ADMIN) and /dev/net/tun.
func Supported() error {
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("nemesis: no /dev/net/tun, so no TAP device can be made: %w", err)
	}
	if err := inNew(func() error { return nil }); err != nil {
		return fmt.Errorf("nemesis: cannot make a network namespace (run as root): %w", err)
	}
	return nil
}

// inNew runs f on a thread in a new, unnamed network namespace, which
// goes away with it.
func inNew(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with its namespace
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

// in runs f on a thread that is inside ns, then returns the thread to
// the namespace it came from. Every socket f opens and every process it
// starts belongs to ns: this is how the nemesis reaches the namespaces
// it made without giving the root namespace an address in them.
func in(ns netns.NsHandle, f func() error) error {
	runtime.LockOSThread()
	home, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("nemesis: this thread's namespace: %w", err)
	}
	defer home.Close()
	if err := netns.Set(ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("nemesis: enter namespace: %w", err)
	}
	ferr := f()
	if err := netns.Set(home); err != nil {
		// Left locked, the thread exits with its goroutine rather than
		// serve another goroutine from the wrong namespace.
		return errors.Join(ferr, fmt.Errorf("nemesis: leave namespace: %w", err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// newNamespace makes the named namespace with a TAP device of the given
// MAC and IPv4 address (a.b.c.d/prefix) inside, up, with permanent
// neighbour entries for every peer so that no ARP is needed, and its
// loopback up.
func newNamespace(name, tapName, mac, cidr string, peers map[string]string) (*namespace, error) {
	n := &namespace{name: name}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer home.Close()
		n.ns, err = netns.NewNamed(name)
		if err != nil {
			errc <- fmt.Errorf("make namespace %s: %w", name, err)
			return
		}
		err = n.configure(tapName, mac, cidr, peers)
		if serr := netns.Set(home); serr != nil {
			errc <- errors.Join(err, serr) // the thread stays locked and dies
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	if err := <-errc; err != nil {
		n.close()
		return nil, fmt.Errorf("nemesis: %w", err)
	}
	return n, nil
}

// configure sets up the namespace the calling thread is in.
func (n *namespace) configure(tapName, mac, cidr string, peers map[string]string) error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("%s: loopback: %w", n.name, err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("%s: loopback up: %w", n.name, err)
	}
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return err
	}
	tap := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: tapName, HardwareAddr: hw},
		Mode: netlink.TUNTAP_MODE_TAP, Flags: netlink.TUNTAP_NO_PI, Queues: 1, NonPersist: true}
	if err := netlink.LinkAdd(tap); err != nil {
		return fmt.Errorf("%s: TAP device %s: %w", n.name, tapName, err)
	}
	n.tap = tap.Fds[0]
	link, err := netlink.LinkByName(tapName)
	if err != nil {
		return err
	}
	addr, err := netlink.ParseAddr(cidr)
	if err != nil {
		return err
	}
	steps := []func() error{
		func() error { return netlink.LinkSetHardwareAddr(link, hw) },
		func() error { return netlink.AddrAdd(link, addr) },
		func() error { return netlink.LinkSetUp(link) },
	}
	for ip, peerMAC := range peers {
		phw, err := net.ParseMAC(peerMAC)
		if err != nil {
			return err
		}
		neigh := &netlink.Neigh{LinkIndex: link.Attrs().Index, State: netlink.NUD_PERMANENT,
			IP: net.ParseIP(ip), HardwareAddr: phw, Family: netlink.FAMILY_V4}
		steps = append(steps, func() error { return netlink.NeighSet(neigh) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("%s: configure %s: %w", n.name, tapName, err)
		}
	}
	return nil
}

// port is the switch's end of the namespace: its TAP device.
func (n *namespace) port() io.ReadWriter { return n.tap }

// close removes the namespace; its TAP device goes with the last file
// that holds it.
func (n *namespace) close() error {
	var errs []error
	if n.tap != nil {
		errs = append(errs, n.tap.Close())
	}
	if n.ns.IsOpen() {
		errs = append(errs, n.ns.Close())
	}
	if _, err := os.Stat(filepath.Join(netnsDir, n.name)); err == nil {
		errs = append(errs, netns.DeleteNamed(n.name))
	}
	return errors.Join(errs...)
}

// dial connects from inside the namespace.
func (n *namespace) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := in(n.ns, func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// listen listens inside the namespace.
func (n *namespace) listen(addr string) (net.Listener, error) {
	var l net.Listener
	err := in(n.ns, func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	})
	return l, err
}

// start starts cmd inside the namespace: a child forked from a thread
// in a namespace is born in it. The child is killed if the nemesis dies.
func (n *namespace) start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return in(n.ns, cmd.Start)
}

// removeStale deletes the namespaces an earlier run left under prefix,
// first killing the processes still inside them (a run killed with -9
// leaves its nodes): they are this suite's, told by their namespace. A
// run names its namespaces prefix<pid>-..., so that the namespaces of a
// run still going (another user's make test on the same machine) are
// left alone.
func removeStale(prefix string) ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) || ownerAlive(strings.TrimPrefix(e.Name(), prefix)) {
			continue
		}
		path := filepath.Join(netnsDir, e.Name())
		if err := killInside(path); err != nil {
			errs = append(errs, err)
		}
		if err := netns.DeleteNamed(e.Name()); err != nil {
			errs = append(errs, fmt.Errorf("nemesis: remove stale namespace %s: %w", e.Name(), err))
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}

// ownerAlive reports whether the process whose pid starts rest
// ("1234-n1") is alive.
func ownerAlive(rest string) bool {
	var pid int
	if _, err := fmt.Sscanf(rest, "%d-", &pid); err != nil || pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// killInside sends SIGKILL to every process whose network namespace is
// the one bound at path.
func killInside(path string) error {
	var want unix.Stat_t
	if err := unix.Stat(path, &want); err != nil {
		return fmt.Errorf("nemesis: stale namespace %s: %w", path, err)
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, p := range procs {
		var pid int
		if _, err := fmt.Sscanf(p.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) != nil {
			continue
		}
		if st.Dev == want.Dev && st.Ino == want.Ino {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	return nil
}
