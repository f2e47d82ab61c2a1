package server

import (
	"os"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/config"
	"github.com/chronos-timer/chronos/server/observe"
)

// Status returns what the node holds and its latest resync's progress.
func (s *Server) Status() observe.Status {
	var st observe.Status
	s.serial.Do(func() {
		m := s.node.Membership()
		stats := s.node.Stats()
		st = observe.Status{
			Address: s.node.Address(), Version: observe.BuildVersion(), ViewID: observe.FormatView(s.node.ViewID()),
			Nodes: m.Nodes, Joining: m.Joining, Leaving: m.Leaving,
			Timers: stats.Timers, Tombstones: stats.Tombstones,
			Resync: observe.Report(s.node.ResyncStatus()),
		}
		st.Instance, st.InstanceDerived = s.node.Instance()
	})
	st.PID = os.Getpid()
	st.Peers = s.peers.Report()
	return st
}

// register adds the node's figures, the internal requests refused for
// want of a client certificate and the build to reg.
func (s *Server) register(reg prometheus.Registerer) {
	observe.RegisterNode(reg, func() (st node.Stats, r node.ResyncStatus) {
		s.serial.Do(func() { st, r = s.node.Stats(), s.node.ResyncStatus() })
		return st, r
	})
	observe.RegisterCertRefusals(reg, func() uint64 {
		if s.certs == nil {
			return 0
		}
		return s.certs.refused.Load()
	})
	observe.RegisterBuildInfo(reg)
}

// peerAddrs lists the addresses whose reachability the Server follows:
// every other member, steady, joining or leaving, and the remote sites
// the node replicates to.
func peerAddrs(c config.Node) []string {
	var out []string
	for _, a := range c.Cluster.All() {
		if a != c.Localhost {
			out = append(out, a)
		}
	}
	if c.ReplicateAcrossSites {
		for _, s := range c.RemoteSites {
			out = append(out, s.Address)
		}
	}
	return slices.Compact(out)
}
