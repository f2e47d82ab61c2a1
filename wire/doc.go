// Package wire is the Chronos API as data: the types of a timer definition
// and of the replication between nodes, their JSON bodies parsed,
// validated and encoded byte for byte, timer IDs formatted and parsed,
// and the API's named limits and headers (docs/api.md). A node (package
// node) and a client (package client) both speak it, so neither imports
// the other; it imports nothing of the project.
//
// Conventions, the same in every layer from client to checker:
//
//   - Units: a duration is a time.Duration in Go. Seconds and
//     milliseconds exist only on the wire, as api.md has them: interval
//     and repeat-for in whole seconds, start-time-delta in milliseconds.
//     Validate refuses a duration the encoding would alter.
//   - Repeat-for: RepeatFor is the span pops fall in, stated. The wire
//     lets a client leave repeat-for out, or send 0, for one interval
//     (one pop); Parse reads either as RepeatFor equal to Interval, so
//     every definition parsed, held by a node or recorded by the checker
//     states it. A Timer written by hand may leave it 0, the API's own
//     shorthand, which Encode sends as 0 and Stated and Pops read as
//     Interval. A RepeatFor below a nonzero Interval asks for no pop.
//   - Tombstone: a replication body with an empty callback deletes the
//     timer; Parse returns it as a Timer with no URI, and
//     AppendReplication writes a Timer with no URI so.
//
// The files:
//
//   - timer.go: Timer, Tag and Replication, and the client-side Validate.
//   - parse.go: Parse and ParseValid, which validate a body member by
//     member, and the bad-request errors they give.
//   - json.go: the walker Parse reads validated bodies with, strings
//     decoded byte for byte.
//   - valid.go: CheckJSON, the one-pass syntax and repeated-member check
//     every body passes first.
//   - encode.go: Encode and AppendReplication, which append bodies by
//     hand, byte for byte what encoding/json wrote.
//   - page.go: the resync page (GET /timers) between nodes.
//   - id.go: timer IDs and unique IDs as hex.
//   - api.go: the named limits and the client API's headers.
package wire
