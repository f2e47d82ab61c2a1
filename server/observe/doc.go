// Package observe is what an operator sees of a production node besides
// its API: GET /status (Status, the node's holdings, its latest resync
// and its peers' reachability), the Prometheus metrics on /metrics (the
// node's own figures, the inbound requests by route and code, the build),
// the log lines about peers that become unreachable and come back
// (Peers), and Go's profiles on a loopback address of their own (pprof).
//
// It reads the node only through the functions it is given (package
// server passes them, under the node's lock), and the outbound requests'
// outcomes through transport's errors; transport registers its own
// metrics on the same registry.
//
// Files: status.go (GET /status), metrics.go (the registry and
// /metrics), nodemetrics.go (the node's figures), inbound.go (requests
// by route), peers.go (reachability), version.go (the build), pprof.go.
package observe
