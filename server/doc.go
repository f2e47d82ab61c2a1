// Package server runs a production Chronos node: it builds the node from
// its configuration (package config), drives it with a real clock and
// the HTTP of package transport, keeps its timers on disk (package
// storage), serves it with TLS if configured, and runs it until a stop
// signal, reloading on the others. The process around it (log file, pid
// file, --daemon, which signals mean what) is package lifecycle.
//
// The node (package node) is single-threaded pure logic (docs/design.md section
// 2). The adapter's duties towards it are:
//
//  1. Serialize every call into the node with one Serial: an inbound request
//     (transport.Handler), an alarm firing (Clock), a network completion
//     (transport.Client), a storage sync. Never two at once.
//  2. Never block under that lock: HTTP reads, writes and round trips happen
//     outside it, and only their results are handed in.
//  3. Bound everything: request and response bodies (wire.MaxBodyBytes), the
//     wait for a reply (config.Node.ReplyTimeout), the outbound queues (per
//     host and in all) and the workers serving them, each outbound request's
//     wait to be written (node.Request.MaxWait, within the Client's bound)
//     and its round trip from then on (the node's timeout), shutdown
//     (config.Node.ShutdownTimeout). What a bound refuses is shed visibly: an
//     error to the node, a counter on /metrics and a rate-limited log line.
//  4. After shutdown, or after the node panicked, drop late alarms and
//     completions instead of re-entering a stopped node.
//
// cmd/chronos wires this package: parse flags (config.Flags), load and
// validate the configuration (config.Flags.Load), then Run.
package server
