// Package transport is a production node's HTTP, both ways: the Handler
// that hands each inbound request to the node and writes its reply, and
// the Client, the node's network (node.Network), that carries its
// outbound requests (callbacks, replication, pop notices, resync pages).
//
// The Client queues each request for its destination host, served by a
// bounded set of workers each holding one connection, and sheds what
// waits too long or finds its queue full (ErrShed); callbacks are dialled
// only to addresses the callback policy allows, requests to peers from
// the node's own address, both through the static DNS records first. A
// callback to a plain http:// URL is written and read by its worker
// itself, over that worker's own kept connection (direct.go).
// Requests between nodes that write travel in batches when their peer is
// busy: the Client sends them to BatchPath, and the Handler hands each
// sub-request to the node as if it had arrived alone (batch.go is the
// format).
//
// Both enter the node only through the enter function they are given
// (the server's Serial.Do), which serializes every call into it, and
// neither blocks under it: bodies are read, written and waited for
// outside.
//
// Files: handler.go and batchserve.go (inbound), client.go, pipeline.go,
// worker.go, batchsend.go, peerconn.go and direct.go (outbound; the
// last two, the connections the workers of a peer's batched queue, and
// of a callback host, hold themselves), batch.go (the batch format),
// outbound.go, dnsdial.go and peek_*.go (dialing, and checking a kept
// connection), metrics.go (the Client's Prometheus collectors).
package transport
