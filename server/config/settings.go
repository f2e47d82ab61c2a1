package config

import (
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// setting is one setting of the configuration files and the command line,
// declared once in table. From the table come the INI keys and their
// parsing (parseFile), the flags (Flags.Register), the keys that raise no
// warning (readKeys), the defaults (Default) and the tables of
// docs/configuration.md (TestConfigurationDoc checks them). Adding a
// setting is a Node field and a row here; the docs are then rewritten by
// `go test ./server/config -run TestConfigurationDoc -rewrite`.
type setting struct {
	// section and key name it in any of the INI files: [section] key.
	section, key string
	// flag, when not empty, is the flag that overrides every file, and
	// usage its help, with its placeholder in backquotes (flag.PrintDefaults);
	// flagUsage adds the key and the default.
	flag, usage string
	// fileFlag, when not empty, is a second flag naming a file that holds
	// the value (so that a secret shows in no process list), and fileUsage
	// its help. Giving both flags is an error.
	fileFlag, fileUsage string
	// what and byDefault are the docs' columns: what the key is, and what
	// holds without it.
	what, byDefault string
	// example is a valid value, which the tests give through each file and
	// the flag.
	example string
	// list settings add up: each line of a file, and each use of the flag,
	// adds its items; a layer that gives the list replaces the list of the
	// layers under it.
	list bool
	// secret values appear in no error and no log: a file's inline comment
	// may not cut one short (commentCut), and the flag's error waits for
	// Flags.Load, as the flag package would print the value.
	secret bool
	// looseFlag takes the flag's value as written, trimmed: Validate checks
	// it once the layers are merged.
	looseFlag bool
	// def is Default's value, of the field's type; nil leaves the
	// field's zero value.
	def  any
	bind binding
}

// binding ties a setting to its Node field: parse reads one value of a
// file line or a flag, set stores a merged value.
type binding struct {
	parse func(field, v string) (any, error)
	set   func(c *Node, v any)
	// join adds a later value of a list to an earlier one; nil for a
	// single value, where the later replaces the earlier.
	join func(a, b any) any
}

// scalar binds a single-valued setting of type T to the field ptr returns.
func scalar[T any](ptr func(*Node) *T, parse func(field, v string) (T, error)) binding {
	return binding{
		parse: func(field, v string) (any, error) { return parse(field, v) },
		set:   func(c *Node, v any) { *ptr(c) = v.(T) },
	}
}

// list binds a list setting of items T to the field ptr returns.
func list[T any](ptr func(*Node) *[]T, parse func(field, v string) ([]T, error)) binding {
	b := scalar(ptr, parse)
	b.join = func(a, b any) any { return append(a.([]T), b.([]T)...) }
	return b
}

// flagUsage is the help of s's flag: its usage, the key it overrides and
// the default, as the docs give it but for the backquotes.
func (s *setting) flagUsage() string {
	return s.usage + "\n" + s.id() + "; default: " + strings.ReplaceAll(s.byDefault, "`", "")
}

// id names s in a layer and in messages: "[section] key".
func (s *setting) id() string { return "[" + s.section + "] " + s.key }

// table is every setting of the files and the flags, in the order of the
// docs' tables. The flags that only name files (--local-config-file and
// the like, --pidfile, --daemon) are not settings of the files: they are
// registered in flags.go.
var table = []setting{
	{section: "http", key: "bind-address", flag: "bind-address", usage: "`host` to listen on",
		what: "read", byDefault: "127.0.0.1 (the original: 0.0.0.0)", example: "0.0.0.0", def: DefaultBindAddress,
		bind: scalar(func(c *Node) *string { return &c.BindAddress }, parseText)},
	{section: "http", key: "bind-port", flag: "bind-port", usage: "`port` to listen on",
		what: "read", byDefault: "7253", example: "7300", def: wire.DefaultPort,
		bind: scalar(func(c *Node) *int { return &c.BindPort }, parsePort)},
	{section: "http", key: "tls_cert_file", flag: "tls-cert-file", usage: "`path` of this node's certificate chain, PEM: serve HTTPS only",
		what:      "this implementation's own: the node's certificate chain, PEM; set (with `tls_key_file`), it serves HTTPS only, to clients and peers, and reaches its peers over HTTPS ([operations.md](operations.md#security)); read again on SIGHUP",
		byDefault: "none: plain HTTP", example: "/etc/chronos/node.crt",
		bind: scalar(func(c *Node) *string { return &c.TLSCertFile }, parseFolder)},
	{section: "http", key: "tls_key_file", flag: "tls-key-file", usage: "`path` of this node's private key, PEM",
		what:      "this implementation's own: the node's private key, PEM, for `tls_cert_file`; read again on SIGHUP",
		byDefault: "none", example: "/etc/chronos/node.key",
		bind: scalar(func(c *Node) *string { return &c.TLSKeyFile }, parseFolder)},
	{section: "logging", key: "level", flag: "log-level", usage: "log `level`: 0-5 or error, warning, status, info, verbose, debug",
		what:      "read: 0 error, 1 warning, 2 status, 3 info, 4 verbose, 5 debug, as the original, or the name (2 and 3 are one level here); changed by SIGHUP",
		byDefault: "2 (status)", example: "4", def: slog.LevelInfo,
		bind: scalar(func(c *Node) *slog.Level { return &c.LogLevel }, parseLevel)},
	{section: "logging", key: "format", flag: "log-format", usage: "log line `format`: text (key=value) or json",
		what:      "this implementation's own: `text` (key=value) or `json`; read at start",
		byDefault: "text", example: "json", def: LogText,
		bind: scalar(func(c *Node) *string { return &c.LogFormat }, parseLogFormat)},
	{section: "logging", key: "folder", flag: "log-folder", usage: "`folder` to write the log file " + LogFileName + " to",
		what: "read: see below", byDefault: "none: stderr only (the original: `/var/log/chronos`)", example: "/var/log/chronos",
		bind: scalar(func(c *Node) *string { return &c.LogFolder }, parseFolder)},
	{section: "identity", key: "instance_id", flag: "instance-id", usage: "this node's instance `number`, unique in the cluster (0-1023)",
		what: "read, 0-1023 (docs/design.md 4.2)", byDefault: "derived from the membership", example: "1", def: node.AutoInstanceID,
		bind: scalar(func(c *Node) *int { return &c.InstanceID }, parseInstanceID)},
	{section: "cluster", key: "localhost", flag: "localhost", usage: "this node's address as the cluster knows it, `host:port`", looseFlag: true,
		what: "read: this node's address among the members", byDefault: "the bind address and port", example: "127.0.0.1",
		bind: scalar(func(c *Node) *string { return &c.Localhost }, parseLocalhost)},
	{section: "cluster", key: "node", flag: "node", usage: "cluster member `host:port`; repeat or separate with commas", list: true,
		what: "read: one address a line, or several separated by commas", byDefault: "none: a cluster of this node alone", example: "127.0.0.1",
		bind: list(func(c *Node) *[]string { return &c.Cluster.Nodes }, parseAddresses)},
	{section: "cluster", key: "joining", flag: "joining", usage: "joining node `host:port`; repeat or separate with commas", list: true,
		what: "read: nodes joining the cluster, as `node`", byDefault: "none", example: "127.0.0.2",
		bind: list(func(c *Node) *[]string { return &c.Cluster.Joining }, parseAddresses)},
	{section: "cluster", key: "leaving", flag: "leaving", usage: "leaving node `host:port`; repeat or separate with commas", list: true,
		what: "read: nodes leaving the cluster, as `node`", byDefault: "none", example: "127.0.0.3",
		bind: list(func(c *Node) *[]string { return &c.Cluster.Leaving }, parseAddresses)},
	{section: "cluster", key: "key", flag: "cluster-key", usage: "`secret` shared by every node for the internal API, at least 16 bytes (prefer [cluster] key: a flag shows in the process list)", secret: true,
		fileFlag: "cluster-key-file", fileUsage: "`path` of a file holding the cluster key, which then shows in no process list",
		what:      "this implementation's own: the internal API's key, at least 16 bytes, without `#` or `;` (docs/design.md 4.13); changed by SIGHUP",
		byDefault: "none: internal requests are taken only from the members' IP addresses", example: "0123456789abcdef",
		bind: scalar(func(c *Node) *string { return &c.ClusterKey }, parseClusterKey)},
	{section: "cluster", key: "accepted_key", secret: true,
		what:      "this implementation's own: a second key taken but never signed with, during a rotation ([operations.md](operations.md#rotating-the-cluster-key)); changed by SIGHUP",
		byDefault: "none", example: "fedcba9876543210",
		bind: scalar(func(c *Node) *string { return &c.AcceptedKey }, parseClusterKey)},
	{section: "cluster", key: "tls_ca_file", flag: "tls-ca-file", usage: "`path` of the CA certificate that signs the members' certificates: mutual TLS between nodes",
		what:      "this implementation's own: the CA certificate, PEM, that signs the members' certificates; set (with `tls_cert_file`), TLS between nodes is mutual: an internal request without a client certificate it signed is refused with 403; read again on SIGHUP",
		byDefault: "none", example: "/etc/chronos/ca.crt",
		bind: scalar(func(c *Node) *string { return &c.TLSCAFile }, parseFolder)},
	{section: "cluster", key: "max_message_age",
		what:      "this implementation's own: how long after it was sent an internal request is still taken, beyond the clock skew (docs/design.md 4.13), a duration such as `7s`",
		byDefault: node.DefaultMaxMessageAge.String(), example: "7s",
		bind: scalar(func(c *Node) *time.Duration { return &c.MaxMessageAge }, parseAge)},
	{section: "cluster", key: "max_clock_skew",
		what:      "this implementation's own: how far apart the members' clocks may be, a duration (docs/design.md 4.13)",
		byDefault: node.DefaultMaxClockSkew.String(), example: "2s",
		bind: scalar(func(c *Node) *time.Duration { return &c.MaxClockSkew }, parseSkew)},
	{section: "sites", key: "local_site", flag: "local-site", usage: "this node's site `name`",
		what: "read", byDefault: "`site1`", example: "a", def: node.DefaultConfig().LocalSite,
		bind: scalar(func(c *Node) *string { return &c.LocalSite }, parseText)},
	{section: "sites", key: "remote_site", flag: "remote-site", usage: "remote site as `name=host:port`; repeat for more", list: true,
		what: "read: `name=host:port`, one a line", byDefault: "none", example: "b=127.0.0.4",
		bind: list(func(c *Node) *[]node.Site { return &c.RemoteSites }, parseSites)},
	{section: "sites", key: "replicate_timers_across_sites", flag: "replicate-timers-across-sites",
		usage: "whether timers are replicated to the remote sites: a `bool`, true or false",
		what:  "read: see below", byDefault: "false, as in the original", example: "true",
		bind: scalar(func(c *Node) *bool { return &c.ReplicateAcrossSites }, parseBool)},
	{section: "callbacks", key: "allowed_host", flag: "allowed-callback-host", list: true,
		usage:     "allowed callback `host`, host:port or IP prefix (e.g. 127.0.0.0/8); repeat or separate with commas",
		what:      "this implementation's own: hosts, host:port pairs or IP prefixes, one a line or separated by commas (docs/design.md 4.14)",
		byDefault: "any host", example: "::1",
		bind: list(func(c *Node) *[]string { return &c.CallbackHosts }, parseCallbackHosts)},
	{section: "limits", key: "memory_limit", flag: "memory-limit", usage: "soft memory limit of the process, a `size` such as 2GiB (GOMEMLIMIT's syntax)",
		what:      "this implementation's own: the soft memory limit, GOMEMLIMIT's syntax (`2GiB`), at least 64 MiB (docs/design.md 5.1)",
		byDefault: "none (GOMEMLIMIT applies, if set)", example: "2GiB",
		bind: scalar(func(c *Node) *int64 { return &c.MemoryLimit }, parseMemoryLimit)},
	{section: "limits", key: "gc_headroom", flag: "gc-headroom", usage: "the collector's headroom above the live heap, a `percent` of it (25%), or off for GOGC's own",
		what:      "this implementation's own: after each collection the node sets GOGC so that the heap grows by this share of what is live (at least 32 MiB, at most GOGC=100's) before the next; a percent from 1 to 100, or `off` for Go's own pacing; ignored when the GOGC environment variable is set (docs/design.md 5.1)",
		byDefault: "25%", example: "off", def: DefaultGCHeadroom,
		bind: scalar(func(c *Node) *int { return &c.GCHeadroom }, parseGCHeadroom)},
	{section: "limits", key: "max_timers",
		what:      "this implementation's own: the records (timers and tombstones) a node holds before it answers 503",
		byDefault: strconv.Itoa(node.DefaultMaxTimers), example: "1000",
		bind: scalar(func(c *Node) *int { return &c.MaxTimers }, parseCount)},
	{section: "limits", key: "max_timer_bytes",
		what:      "this implementation's own: the byte budget of the records a node holds, their callback URIs and opaque data plus 200 bytes each, GOMEMLIMIT's syntax, at least 1 MiB; past it, 503 (docs/design.md 4.17)",
		byDefault: "7/8 of the memory limit; without one, 7/16 of the memory the process may use (its cgroup's limit, or the machine's)", example: "64MiB",
		bind: scalar(func(c *Node) *int64 { return &c.MaxTimerBytes }, parseTimerBytes)},
	{section: "storage", key: "dir", flag: "storage-dir", usage: "`folder` the node keeps its timers in across restarts, in a subfolder per node address; empty keeps them in memory only",
		what:      "this implementation's own: the folder the node keeps its timers in across restarts, in a subfolder named for its address (`127.0.0.1_7253`); empty keeps them in memory only (docs/design.md 4.16)",
		byDefault: "`chronos-data`, relative to the working directory", example: "chronos-data",
		bind: scalar(func(c *Node) *string { return &c.StorageDir }, parseStorageDir)},
	{section: "debug", key: "pprof_address", flag: "pprof-address", usage: "loopback `host:port` to serve Go's profiles (/debug/pprof/) on",
		what:      "this implementation's own: a loopback `host:port` (127.0.0.0/8 or `[::1]`) on which the process serves Go's profiles, `net/http/pprof` at `/debug/pprof/`, for `go tool pprof` ([operations.md](operations.md#profiles)); read at start",
		byDefault: "none: no profiles served", example: "127.0.0.1:6060",
		bind: scalar(func(c *Node) *string { return &c.PprofAddress }, parseText)},
}

// settings is one configuration layer (the defaults, a file, the flags):
// the value of each setting it gives, by setting.id. Layers apply in
// order, defaults first and flags last, each overriding only what it
// gives.
type settings map[string]any

// give records v for s, adding it to what the layer gives already if s is
// a list.
func (l settings) give(s *setting, v any) {
	if prev, ok := l[s.id()]; ok && s.bind.join != nil {
		v = s.bind.join(prev, v)
	}
	l[s.id()] = v
}

// apply copies the given settings onto c.
func (l settings) apply(c *Node) {
	for i := range table {
		if v, ok := l[table[i].id()]; ok {
			table[i].bind.set(c, v)
		}
	}
}

// defaults is the layer of the table's defaults.
var defaults = func() settings {
	l := settings{}
	for i := range table {
		if table[i].def != nil {
			l.give(&table[i], table[i].def)
		}
	}
	return l
}()

// fileKeys is every key of the table, by section.
func fileKeys() map[string][]string {
	keys := map[string][]string{}
	for _, s := range table {
		keys[s.section] = append(keys[s.section], s.key)
	}
	return keys
}
