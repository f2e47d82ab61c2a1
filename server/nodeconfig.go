package server

import (
	"log/slog"

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
	return nc
}
