package server

import (
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"net"
	"net/netip"
	"strconv"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/config"
)

// nodeConfig is the node's configuration for c, with the adapter's clock
// and network, its byte budget (timerBudget) and its own addresses.
func nodeConfig(c config.Node, clk node.Clock, nw node.Network, log *slog.Logger) node.Config {
	nc := node.DefaultConfig()
	nc.Address = c.Localhost
	nc.InstanceID = c.InstanceID
	nc.Cluster = c.Cluster
	nc.LocalSite = c.LocalSite
	// The node replicates to every remote site it is given: with
	// replication across sites off, it is given none.
	if c.ReplicateAcrossSites {
		nc.RemoteSites = c.RemoteSites
	}
	nc.ClusterKey, nc.AcceptedKey = c.ClusterKey, c.AcceptedKey
	if c.MaxMessageAge > 0 {
		nc.MaxMessageAge = c.MaxMessageAge
	}
	if c.MaxClockSkew > 0 {
		nc.MaxClockSkew = c.MaxClockSkew
	}
	if c.MaxTimers > 0 {
		nc.Limits.MaxTimers = c.MaxTimers
	}
	nc.Limits.MaxHeldBytes = timerBudget(c)
	nc.CallbackHosts = c.CallbackHosts
	nc.OwnAddresses = ownAddresses(c.BindAddress, c.BindPort)
	nc.Clock = clk
	nc.Network = nw
	nc.Logger = log
	nc.Seed = osSeed()
	return nc
}

// osSeed is the node's seed (node.Config.Seed) from the operating
// system's randomness: it draws the node's jitter, so that nodes
// restarted together do not retry in step, and keys the hash its store
// finds timers by, so that no client can choose IDs that collide in it.
func osSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return binary.LittleEndian.Uint64(b[:])
}

// ownAddresses are the addresses the node serves on besides its cluster
// address, which callbacks may not reach by default: the bind address
// and port, and when that is unspecified (every interface), each of the
// machine's interface addresses at the port (and, by the policy's rule,
// every loopback address).
func ownAddresses(bind string, port int) []string {
	out := []string{net.JoinHostPort(bind, strconv.Itoa(port))}
	if ip, err := netip.ParseAddr(bind); err != nil || !ip.IsUnspecified() {
		return out
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return out
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, netip.AddrPortFrom(p.Addr(), uint16(port)).String())
		}
	}
	return out
}
