// Package server is the production adapter of a Chronos node: a real clock,
// a net/http server feeding inbound requests, a net/http client carrying
// outbound ones, and the run loop with its signals. Its configuration
// (the files, the flags, the settings table) is package config.
//
// The node (package node) is single-threaded pure logic (docs/design.md section
// 2). The adapter's duties towards it are:
//
//  1. Serialize every call into the node with one Serial: an inbound request
//     (Handler), an alarm firing (Clock), a network completion (Client).
//     Never two at once.
//  2. Never block under that lock: HTTP reads, writes and round trips happen
//     outside it, and only their results are handed in.
//  3. Bound everything: request and response bodies (node.MaxBodyBytes), the
//     wait for a reply (config.Node.ReplyTimeout), the outbound queues (per host
//     and in all) and the workers serving them, each outbound request's
//     wait to be written (node.Request.MaxWait, within clientMaxQueueWait)
//     and its round trip from then on (the node's timeout), shutdown
//     (config.Node.ShutdownTimeout). What a bound refuses is shed visibly: an
//     error to the node, a counter on /metrics and a rate-limited log line.
//  4. After shutdown, or after the node panicked, drop late alarms and
//     completions instead of re-entering a stopped node.
//
// cmd/chronos wires this package: parse flags (config.Flags), load and validate
// the configuration (config.Flags.Load), then Run.
package server
