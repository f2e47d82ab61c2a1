package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// Adapter defaults.
const (
	// DefaultBindAddress is where a node with no configuration serves.
	DefaultBindAddress = "127.0.0.1"
	// DefaultReplyTimeout bounds the wait for the node's reply to one
	// request; the node itself answers writes within its
	// ReplicationTimeout, so this is only a ceiling against a lost reply.
	DefaultReplyTimeout = 10 * time.Second
	// DefaultShutdownTimeout bounds the graceful shutdown.
	DefaultShutdownTimeout = 15 * time.Second
	// MinMemoryLimit is the least soft memory limit accepted: below it the
	// collector would run without pause on the heap of an idle node.
	MinMemoryLimit = 64 << 20
	// DefaultGCHeadroom is [limits] gc_headroom's default, percent of the
	// live heap (docs/design.md 5.1).
	DefaultGCHeadroom = 25
	// MinTimerBytes is the least byte budget of held timers accepted.
	MinTimerBytes = 1 << 20
)

// DefaultStorageDir is the folder nodes keep their storage in by default,
// relative to the working directory: each node in a subfolder named for
// its address (docs/configuration.md, [storage]).
const DefaultStorageDir = "chronos-data"

// LogFileName is the log file the node writes in the [logging] folder
// (OpenLog in package lifecycle).
const LogFileName = "chronos.log"

// Node is the production configuration: what chronos.conf,
// chronos_cluster.conf and chronos_shared.conf hold, merged
// (docs/design.md 4.9), the static DNS records of dns.json, plus the
// process's and the adapter's own knobs. Start from Default.
type Node struct {
	// BindAddress and BindPort are where the HTTP server listens
	// ([http] bind-address, bind-port).
	BindAddress string
	BindPort    int
	// LogLevel is the slog level ([logging] level, 0-5 or a name), and
	// LogFormat how each line is written ([logging] format): LogText
	// (key=value; also when empty) or LogJSON (one JSON object).
	LogLevel  slog.Level
	LogFormat string
	// Level, when not nil, is the level the node's logger filters at,
	// shared by lifecycle.OpenLog's logger and the Server: a reload (SIGHUP) sets
	// it to the LogLevel the files give then. Flags.Load sets it; nil
	// leaves the logger at LogLevel for good.
	Level *slog.LevelVar
	// InstanceID goes into every timer ID this node issues
	// ([identity] instance_id); node.AutoInstanceID, the default, derives
	// it from the membership.
	InstanceID int
	// CallbackHosts, when not empty, is the allow-list of hosts timer
	// callbacks may reach ([callbacks] allowed_host): a host name or IP, a
	// host:port, or an IP prefix such as 127.0.0.0/8. Empty allows any.
	CallbackHosts []string
	// Localhost is this node's address as the cluster knows it, host:port
	// ([cluster] localhost). Empty means the bind address and port.
	Localhost string
	// Cluster is the membership ([cluster] node, joining, leaving); empty
	// means a cluster of just this node.
	Cluster node.Membership
	// LocalSite and RemoteSites are the replication sites ([sites]
	// local_site, remote_site = name=address).
	LocalSite   string
	RemoteSites []node.Site
	// ReplicateAcrossSites is whether timers are replicated to the remote
	// sites ([sites] replicate_timers_across_sites). Off, the default as
	// in the original, the node is given no remote sites: it forwards
	// nothing to them, while still taking what they forward to it.
	ReplicateAcrossSites bool
	// ClusterKey is the secret shared by every node of the cluster and of
	// its remote sites ([cluster] key): internal requests are signed with
	// it. Empty, the node takes internal requests only from its members'
	// IP addresses (and a lone node from none). It is never logged.
	ClusterKey string
	// AcceptedKey is a second key internal requests may be signed with
	// ([cluster] accepted_key), never signed with: the other key of a
	// rotation (docs/operations.md). It is never logged.
	AcceptedKey string
	// MaxMessageAge and MaxClockSkew bound the age of the internal
	// requests a node takes ([cluster] max_message_age, max_clock_skew;
	// 0: node.DefaultMaxMessageAge and node.DefaultMaxClockSkew).
	MaxMessageAge time.Duration
	MaxClockSkew  time.Duration
	// MaxTimers bounds the records the node holds ([limits] max_timers;
	// 0: node.DefaultMaxTimers).
	MaxTimers int
	// MaxTimerBytes is the byte budget of the records the node holds
	// ([limits] max_timer_bytes): their callbacks and opaque data, and
	// node.RecordOverheadBytes each. 0 sizes it to the memory the process
	// may use (see timerBudget).
	MaxTimerBytes int64
	// TLSCertFile and TLSKeyFile are the node's certificate chain and
	// key, PEM ([http] tls_cert_file, tls_key_file): set, the node serves
	// HTTPS only and reaches its peers over HTTPS. TLSCAFile is the CA
	// that signs the members' certificates ([cluster] tls_ca_file): set,
	// TLS between nodes is mutual (see server/tls.go). All are read again on
	// SIGHUP.
	TLSCertFile string
	TLSKeyFile  string
	TLSCAFile   string
	// MemoryLimit is the process's soft memory limit in bytes ([limits]
	// memory_limit, --memory-limit), set with debug.SetMemoryLimit by Run:
	// the collector works harder as the heap nears it, so that a large
	// timer store needs less headroom than GOGC alone leaves
	// (docs/design.md section 5.1). 0, the default, leaves the runtime's
	// own, GOMEMLIMIT or none.
	MemoryLimit int64
	// GCHeadroom is the collector's headroom above the live heap, percent
	// of it ([limits] gc_headroom): after each collection Run sets GOGC so
	// that the heap grows by that much (at least 32 MiB, at most GOGC=100's)
	// before the next (docs/design.md 5.1). 0 is off, Go's own pacing; the
	// GOGC environment variable, when set, overrides it.
	GCHeadroom int

	// LogFolder, when not empty, receives the log file LogFileName
	// ([logging] folder); empty logs to stderr only.
	LogFolder string

	// StorageDir is the folder the node keeps its timers in, across
	// restarts, in a subfolder named for its address ([storage] dir,
	// --storage-dir). Empty keeps them in memory only: a restarted node
	// gets back only what its peers hold (docs/design.md 4.16). The
	// binary's default (Flags.Load) is DefaultStorageDir, relative to
	// the working directory; Default, for embedders and tests,
	// keeps them in memory.
	StorageDir string

	// PprofAddress, when not empty, is a loopback host:port on which the
	// process serves Go's profiles (net/http/pprof: /debug/pprof/) to
	// whoever runs it ([debug] pprof_address, --pprof-address). Empty,
	// the default, serves none: profiles tell an attacker much, so only
	// a loopback address is accepted.
	PprofAddress string

	// LocalConfigFile, ClusterConfigFile and SharedConfigFile are the
	// INI files, read at start and again on SIGHUP, where the membership
	// is taken from them; empty means there is none, and so does a file
	// that does not exist. Any section may sit in any of them; a setting
	// the cluster file gives wins over the local file's, which wins over
	// the shared file's.
	LocalConfigFile   string
	ClusterConfigFile string
	SharedConfigFile  string
	// DNSConfigFile is the JSON file of static DNS records; DNS holds
	// what it gave at start (nil: none).
	DNSConfigFile string
	DNS           *StaticDNS
	// PIDFile, when not empty, receives the process ID once the node
	// listens, and is removed when it stops cleanly (--pidfile).
	PIDFile string
	// ReplyTimeout bounds the wait for the node's reply to one request.
	ReplyTimeout time.Duration
	// ShutdownTimeout bounds the graceful shutdown.
	ShutdownTimeout time.Duration
	// Clock is the wall clock; nil means the real one (clock.New()).
	Clock clock.Clock
	// Warnings are the parts of the files last read (every file by Load,
	// the INI files by ReloadCluster) that were accepted but not read.
	Warnings []Warning

	// flags are the command-line settings, applied again over the
	// re-read files on reload so that flags keep overriding them.
	flags settings
	// absent are the configuration files that did not exist at start;
	// one that did and is gone at a reload is an error.
	absent []string
}

// Default returns the configuration of a lone node on
// 127.0.0.1:7253.
func Default() Node {
	c := Node{
		ReplyTimeout:    DefaultReplyTimeout,
		ShutdownTimeout: DefaultShutdownTimeout,
	}
	defaults.apply(&c)
	return c
}

// ListenAddress is the host:port the HTTP server binds.
func (c Node) ListenAddress() string {
	return net.JoinHostPort(c.BindAddress, strconv.Itoa(c.BindPort))
}

// Normalize fills derived fields and gives port-less addresses this node's
// bind-port, as the original does, so the node sees one spelling of each
// address.
func (c *Node) Normalize() error {
	if c.Localhost == "" {
		// Derived from the bind address, which must be sound first.
		if err := validateBindAddress(c.BindAddress); err != nil {
			return err
		}
		host := c.BindAddress
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			// Bound to every interface: the cluster must be told which
			// address is ours; alone, loopback is as good as any.
			if c.Cluster.Nodes != nil || c.Cluster.Joining != nil || c.Cluster.Leaving != nil {
				return fmt.Errorf("server: localhost is not set and bind-address %q does not name one address", host)
			}
			host = DefaultBindAddress
		}
		c.Localhost = net.JoinHostPort(host, strconv.Itoa(c.BindPort))
	}
	var err error
	if c.Localhost, err = withPort("localhost", c.Localhost, c.BindPort); err != nil {
		return err
	}
	// New slices, never rewritten in place: the caller's lists, and a
	// configuration layer applied again on reload, stay as given.
	var m node.Membership
	if m.Nodes, err = withPorts("node", c.BindPort, c.Cluster.Nodes); err != nil {
		return err
	}
	if m.Joining, err = withPorts("joining", c.BindPort, c.Cluster.Joining); err != nil {
		return err
	}
	if m.Leaving, err = withPorts("leaving", c.BindPort, c.Cluster.Leaving); err != nil {
		return err
	}
	c.Cluster = m
	var sites []node.Site
	for _, s := range c.RemoteSites {
		if s.Address, err = withPort("remote_site "+s.Name, s.Address, c.BindPort); err != nil {
			return err
		}
		sites = append(sites, s)
	}
	c.RemoteSites = sites
	return nil
}

// withPorts applies withPort to each address, into a new slice.
func withPorts(field string, port int, addrs []string) ([]string, error) {
	var out []string
	for _, a := range addrs {
		a, err := withPort(field, a, port)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// withPort returns addr as host:port, adding defaultPort when it has none.
// field names the setting in the error.
func withPort(field, addr string, defaultPort int) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		// No port: a bare host, a bracketed or a bare IPv6 literal.
		host = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
		port = strconv.Itoa(defaultPort)
	}
	if !validHost(host) {
		return "", fmt.Errorf("server: %s %q is not an address", field, addr)
	}
	p, ok := portNumber(port)
	if !ok {
		return "", fmt.Errorf("server: %s %q has no valid port", field, addr)
	}
	// Rewritten from the number, so "h:07253" and "h:7253" are one node.
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// checkAddress reports whether addr is an address withPort accepts,
// with or without a port.
func checkAddress(field, addr string) error {
	_, err := withPort(field, addr, wire.DefaultPort)
	return err
}

// portNumber reads a TCP port: decimal digits only, 1..65535.
func portNumber(s string) (int, bool) {
	if s == "" || len(s) > 5 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	p, _ := strconv.Atoi(s)
	return p, p >= 1 && p <= 65535
}

// validHost reports whether h can be the host part of a URL authority: a
// name or an IP literal (IPv6 without brackets), with no spaces, control
// characters or URL delimiters.
func validHost(h string) bool {
	if h == "" || strings.ContainsAny(h, "/[]@?#%\\") {
		return false
	}
	for i := 0; i < len(h); i++ {
		if h[i] <= ' ' || h[i] == 0x7f {
			return false
		}
	}
	return !strings.Contains(h, ":") || net.ParseIP(h) != nil
}

// Validate reports the first invalid setting, naming it and its value.
func (c Node) Validate() error {
	if err := validateBindAddress(c.BindAddress); err != nil {
		return err
	}
	if c.BindPort < 1 || c.BindPort > 65535 {
		return fmt.Errorf("server: bind-port %d is not in 1..65535", c.BindPort)
	}
	if c.InstanceID < node.AutoInstanceID || c.InstanceID > node.MaxInstanceID {
		return fmt.Errorf("server: instance_id %d is not in 0..%d", c.InstanceID, node.MaxInstanceID)
	}
	for _, h := range c.CallbackHosts {
		if !validCallbackHost(h) {
			return fmt.Errorf("server: allowed_host %q is not a host, host:port or IP prefix", h)
		}
	}
	if _, err := withPort("localhost", c.Localhost, c.BindPort); err != nil {
		return err
	}
	if err := validateMembership(c.Localhost, c.Cluster); err != nil {
		return err
	}
	m := c.Cluster
	if len(m.All()) == 0 {
		m = node.Membership{Nodes: []string{c.Localhost}}
	}
	if _, err := node.InstanceFor(c.Localhost, c.InstanceID, m); err != nil {
		return fmt.Errorf("server: instance_id: %w", err)
	}
	if err := validateSites(c.LocalSite, c.RemoteSites); err != nil {
		return err
	}
	if err := (node.Config{ClusterKey: c.ClusterKey, AcceptedKey: c.AcceptedKey}).CheckKeys(); err != nil {
		// The lengths only: a key never reaches an error or a log.
		return fmt.Errorf("server: %w", err)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") || c.TLSCAFile != "" && c.TLSCertFile == "" {
		return errors.New("server: TLS needs tls_cert_file and tls_key_file together, and tls_ca_file needs both")
	}
	if c.MaxTimerBytes != 0 && c.MaxTimerBytes < MinTimerBytes {
		return fmt.Errorf("server: max_timer_bytes %d is below the least, %d MiB", c.MaxTimerBytes, MinTimerBytes>>20)
	}
	if c.MemoryLimit != 0 && c.MemoryLimit < MinMemoryLimit {
		return fmt.Errorf("server: memory_limit %d bytes is below the least limit, %d MiB", c.MemoryLimit, MinMemoryLimit>>20)
	}
	if err := validatePprofAddress(c.PprofAddress); err != nil {
		return err
	}
	if c.LogFormat != "" && c.LogFormat != LogText && c.LogFormat != LogJSON {
		return fmt.Errorf("server: log format %q is not %s or %s", c.LogFormat, LogText, LogJSON)
	}
	if c.ReplyTimeout <= 0 {
		return fmt.Errorf("server: reply timeout %v is not positive", c.ReplyTimeout)
	}
	if c.ShutdownTimeout <= 0 {
		return fmt.Errorf("server: shutdown timeout %v is not positive", c.ShutdownTimeout)
	}
	return nil
}

// validatePprofAddress accepts no address, or a loopback IP literal with
// a port (0 picks one): profiles are served to the machine itself only.
func validatePprofAddress(a string) error {
	if a == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("server: pprof_address %q is not host:port", a)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("server: pprof_address %q is not on a loopback address (127.0.0.0/8 or ::1): profiles are served to this machine only", a)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("server: pprof_address %q has no port in 0..65535", a)
	}
	return nil
}

func validateBindAddress(a string) error {
	if _, _, err := net.SplitHostPort(a); err == nil {
		return fmt.Errorf("server: bind-address %q carries a port; use bind-port", a)
	}
	if !validHost(a) {
		return fmt.Errorf("server: bind-address %q is not a host", a)
	}
	return nil
}

func validateMembership(self string, m node.Membership) error {
	seen := map[string]string{}
	for _, l := range []struct {
		field string
		addrs []string
	}{{"node", m.Nodes}, {"joining", m.Joining}, {"leaving", m.Leaving}} {
		for _, a := range l.addrs {
			if prev, ok := seen[a]; ok {
				return fmt.Errorf("server: %s %q is already listed as %s", l.field, a, prev)
			}
			seen[a] = l.field
		}
	}
	if len(seen) > 0 && seen[self] == "" {
		return fmt.Errorf("server: localhost %q is not listed as a node, joining or leaving", self)
	}
	return nil
}

func validateSites(local string, remote []node.Site) error {
	if local == "" {
		return errors.New("server: local_site is empty")
	}
	seen := map[string]bool{local: true}
	for _, s := range remote {
		if s.Name == "" {
			return fmt.Errorf("server: remote_site %q has no name", s.Name+"="+s.Address)
		}
		if seen[s.Name] {
			return fmt.Errorf("server: remote_site %q names a site twice", s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

// readFile reads a configuration file; what names its role in errors.
func readFile(what, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("server: read %s: %w", what, err)
	}
	return data, nil
}
