// Package config is the configuration of a production Chronos node: the
// original's INI files (chronos.conf, chronos_cluster.conf,
// chronos_shared.conf) merged in its order, its dns.json, and the command
// line, into one Node (docs/configuration.md).
//
// Every setting is declared once, in the table of settings.go: its
// section and key, its flag, its parser, its field of Node, its default
// and its documentation. The INI parsing (configfile.go), the flags
// (flags.go), the keys that raise no warning (warnings.go), Default and
// the tables of docs/configuration.md all come from it;
// TestConfigurationDoc fails when the page and the table differ.
//
// Adding a setting: a field of Node, a row of the table, then
// `go test ./server/config -run TestConfigurationDoc -rewrite`.
//
// Package server runs a node from a Node; cmd/chronos wires the two:
// Flags.Register, Flags.Load, then server.Run.
package config
