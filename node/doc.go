// Package node is the Chronos node: the replicating proxy and the local
// timer wheel, as pure single-threaded logic with no I/O of its own. The
// same code runs under the deterministic simulator (sim) and in production
// (server).
//
// A Node never reads real time, sleeps, starts goroutines, touches sockets
// or files, or uses global randomness (docs/design.md section 2). Everything
// from outside is injected through Config, and its driver has these duties:
//
//  1. Supply a Clock: Now is the node's wall time; AfterFunc callbacks must
//     be run through the same serialization as every other call into the
//     node.
//  2. Supply a Network: Send performs the request (to a peer for
//     replication, or to a client's callback URI) and calls done exactly
//     once, within the timeout, serialized like everything else.
//  3. Feed every inbound HTTP request to Handle, one call at a time, and
//     deliver the Response passed to reply (which may come later, from a
//     network completion: client writes are answered once replicas have
//     acknowledged them).
//  4. Call SetCluster when the cluster configuration changes.
//  5. Optionally supply a Storage (persist.go): queue the records the node
//     hands it and make them durable when it asks for a barrier (Sync),
//     calling done serialized like everything else; the node answers a
//     request that changed records only after that. At start, before any
//     other call, hand Restore every entry recovered, in the order
//     written, and RestoreMeta the node's own state; then start the
//     start-up resync (Resync(true)) for what the node missed. Take a
//     snapshot with Snapshot, a chunk per turn of the serialization.
//
// A minimal driver looks like this (the production one is package server):
//
//	n, err := node.New(cfg) // cfg.Clock, cfg.Network set
//	...
//	mu.Lock()
//	n.Handle(req, func(r node.Response) { replies <- r })
//	mu.Unlock()
//	resp := <-replies // outside the lock
//
// The package's files, in the order a timer meets them:
//
//   - node.go: the Node, routing of inbound requests, responses.
//   - body.go: a held record as the wire package's types, and back: the
//     definition it holds and the replication body it travels as. The
//     API's types, the JSON codec, validation and wire IDs are package
//     wire's.
//   - id.go, instance.go: unique timer IDs and their generator, instance
//     numbers and the defence against two nodes sharing one.
//   - write.go: client writes (create, update, delete) on the proxy, the
//     quorum they wait for, and their fan-out to the replicas.
//   - read.go: a read of one timer (GET /timers/<id>), gathered from every
//     node that may hold it.
//   - apply.go, merge.go: how a replica applies a record, and the conflict
//     rule every path ends in, as one pure function.
//   - pop.go: the schedule of held records, the callback, pop notices and
//     the repair of stale replicas they bring.
//   - sites.go: forwarding to and placing from other sites.
//   - resync.go: active rebalancing when the membership changes: pages
//     fetched from the peers, taken, passed on, and references sent.
//   - resyncserve.go: the pages a node serves (GET /timers) and the
//     references it takes (DELETE /timers/references).
//   - repair.go: anti-entropy every RepairInterval, and the hand-off of
//     records placed elsewhere.
//   - flow.go: the window per peer that the sends of a resync and a
//     hand-off keep to.
//   - timer.go, store.go: the held record and the timing wheel.
//   - persist.go: what the node hands its Storage, the record encoding,
//     and the restore of a restarted node.
//   - ring.go: rendezvous hashing and the replica bloom filter.
//   - retry.go: the node's own seeded randomness, for jitter only.
//   - probe.go: coverage probes, counted on rare branches for the
//     simulator.
//   - timerlog.go: the debug line each step of a timer logs.
//   - env.go, config.go, auth.go, allow.go: the injected interfaces,
//     configuration, the cluster key, callback address rules.
//   - place.go, budget.go: placement derived from the node's own view,
//     and the bounds (count and bytes) on what a node holds.
package node
