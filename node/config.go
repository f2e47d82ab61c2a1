package node

import (
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// Named limits and protocol constants of the node; the API's own are in
// package wire.
const (
	// MaxInstanceID is the largest instance number an ID can carry.
	MaxInstanceID = 1<<10 - 1
	// AutoInstanceID asks a node to derive its instance number from the
	// cluster membership (see InstanceIDs).
	AutoInstanceID = -1
	// DefaultMaxClockLead bounds how far ahead of a node's own clock a
	// timer ID or version from outside may move its ID generator, as a
	// hybrid logical clock bounds a remote timestamp.
	DefaultMaxClockLead = time.Minute
	// DefaultMaxTimers is the number of records a node holds, tombstones
	// included, before it refuses writes with 503.
	DefaultMaxTimers = 20_000_000
	// MinClusterKeyBytes is the shortest cluster key a node accepts.
	MinClusterKeyBytes = 16
	// CallbackTimeout is how long a client callback may take (api.md).
	CallbackTimeout = 2 * time.Second
	// ReplicaSkew is how much later each replica rank pops.
	ReplicaSkew = 2 * time.Second
	// DefaultMaxClockSkew is how far apart the members' clocks may be:
	// the backup skew, which the design already needs the clocks to keep
	// within (a backup whose clock runs a rank's skew ahead pops before
	// the primary).
	DefaultMaxClockSkew = ReplicaSkew
	// DefaultMaxMessageAge bounds how long after it was sent a message
	// between nodes may arrive: the longest a driver lets one wait for
	// its connection (ReplicaSkew, the MaxWait of every internal
	// request) plus the longest an internal request may then take
	// (ResyncPageTimeout). Its sender has given up on it by then.
	DefaultMaxMessageAge = ReplicaSkew + ResyncPageTimeout
	// DefaultMaxHeldBytes is the byte budget of held records a node
	// starts with when its driver gives none (the production adapter
	// sizes it to the process's memory limit).
	DefaultMaxHeldBytes = 1 << 30
	// RecordOverheadBytes is what a held record costs beyond its
	// callback URI and opaque data, as the byte budget counts it: the
	// record, its index entries and its share of the interned tables
	// (docs/design.md section 5: at most 200 bytes).
	RecordOverheadBytes = 200
)

// CheckKeys checks the lengths of the cluster keys, never showing them.
func (c Config) CheckKeys() error {
	for _, k := range []struct{ field, key string }{{"ClusterKey", c.ClusterKey}, {"AcceptedKey", c.AcceptedKey}} {
		if k.key != "" && len(k.key) < MinClusterKeyBytes {
			return fmt.Errorf("node: config %s is %d bytes, fewer than %d", k.field, len(k.key), MinClusterKeyBytes)
		}
	}
	if c.AcceptedKey != "" && c.ClusterKey == "" {
		return fmt.Errorf("node: config AcceptedKey is set without a ClusterKey to sign with")
	}
	return nil
}

// CallbackPolicy is the policy a node of this configuration applies to
// callbacks: CallbackHosts, with Address and OwnAddresses as its own.
func (c Config) CallbackPolicy() (*CallbackPolicy, error) {
	return NewCallbackPolicy(c.CallbackHosts, append([]string{c.Address}, c.OwnAddresses...))
}

// Membership is the cluster as configured: the steady members, and the
// nodes joining or leaving during a scale operation.
type Membership struct {
	Nodes   []string
	Joining []string
	Leaving []string
}

// Site is a remote site a timer is also replicated to.
type Site struct {
	Name    string
	Address string
}

// Limits bounds what one node holds.
type Limits struct {
	// MaxTimers is the number of timers (tombstones included) a node stores
	// before it answers 503.
	MaxTimers int
	// MaxInFlight is the number of outstanding outbound requests (callbacks
	// and replication) before new work is refused with 503.
	MaxInFlight int
	// MaxHeldBytes is the byte budget of the records a node holds, each
	// counted as its callback URI and opaque data plus
	// RecordOverheadBytes: a write that would take the node past it is
	// refused with 503, as past MaxTimers, so that large bodies cannot
	// exhaust its memory.
	MaxHeldBytes int64
}

// Config configures a Node. Start from DefaultConfig.
type Config struct {
	// Address is this node's address as the cluster knows it ("host:port").
	Address string
	// InstanceID is unique per node in a cluster and goes into every timer
	// ID the node issues (0..MaxInstanceID). AutoInstanceID, the default,
	// derives it from the membership, the same way on every node.
	InstanceID int
	// ClusterKey is the secret every member of the cluster (and of its
	// remote sites) shares. Internal requests (replication, pop notices,
	// tombstones, resync) are signed with it and accepted only with a
	// valid signature (auth.go). Empty, internal requests are accepted
	// only from the members' and remote sites' IP addresses (by the
	// connection's source, Request.Remote), and by a lone node from none.
	ClusterKey string
	// AcceptedKey is a second key internal requests may be signed with,
	// never signed with here: the other key of a rotation
	// (docs/operations.md, "Rotating the cluster key"). Empty accepts
	// ClusterKey alone.
	AcceptedKey string
	// MaxMessageAge bounds how long after its sender sent it an internal
	// request is taken, beyond MaxClockSkew: older, it is refused as late
	// or replayed (see admit). Tombstones outlive it (TombstoneLife).
	MaxMessageAge time.Duration
	// MaxClockSkew is how far the members' clocks may be apart: an
	// internal request dated further ahead of this node's clock is
	// refused, and one is taken up to MaxMessageAge plus this old.
	MaxClockSkew time.Duration
	// CallbackHosts, when not empty, is the allow-list of callback hosts:
	// a timer whose callback URI names another host is refused with 400.
	// An entry is a host name or IP ("cb.example", "::1"), a host and port
	// ("cb.example:8080"), or an IP prefix ("127.0.0.0/8"). Whatever the
	// list, callbacks to link-local and unspecified addresses and to this
	// node's own addresses are refused unless an entry names them (see
	// CallbackPolicy).
	CallbackHosts []string
	// OwnAddresses are the host:port addresses this node serves on
	// besides Address (the production adapter's bind address), refused
	// as callback targets as Address is.
	OwnAddresses []string
	// MaxClockLead bounds how far ahead of this node's clock a timer ID or
	// version it did not issue may move its ID generator; internal
	// versions dated further ahead are refused.
	MaxClockLead time.Duration
	// Cluster is the membership; empty means a cluster of just Address.
	Cluster Membership
	// LocalSite names this node's site; RemoteSites are replicated to.
	LocalSite   string
	RemoteSites []Site
	// ReplicationTimeout is how long the proxying node waits for replicas
	// to acknowledge a client write.
	ReplicationTimeout time.Duration
	Limits             Limits
	// RepairInterval is how often the node compares what it holds with
	// each peer and repairs the difference (repair.go); 0 turns repair
	// off (tests that drive every message by hand).
	RepairInterval time.Duration
	// Seed seeds the node's randomness, which draws jitter (retry and
	// repair waits), and keys the hash its store finds timers by ID with
	// (Store.KeyIndex): the simulator sets it from the run's seed, the
	// production adapter from the operating system.
	Seed uint64
	// ResyncPage is how many timers a resync asks a peer for in one
	// GET /timers page; 0 is DefaultResyncPage. The simulator sets it
	// small, so that its resyncs take many pages.
	ResyncPage int
	// RepairPage is how many records a repair answer lists at most; 0 is
	// MaxRepairEntries. The simulator sets it small, so that its rounds
	// take many pages.
	RepairPage int

	Clock   Clock
	Network Network
	// Storage, if set, keeps the node's records across restarts (see
	// Storage); nil keeps them in memory only.
	Storage Storage
	// Logger receives the node's logs; nil discards them.
	Logger *slog.Logger
}

// DefaultConfig returns the configuration of a lone node on the default
// address; Clock and Network must still be supplied.
func DefaultConfig() Config {
	return Config{
		Address:            fmt.Sprintf("127.0.0.1:%d", wire.DefaultPort),
		InstanceID:         AutoInstanceID,
		MaxClockLead:       DefaultMaxClockLead,
		MaxMessageAge:      DefaultMaxMessageAge,
		MaxClockSkew:       DefaultMaxClockSkew,
		LocalSite:          "site1",
		ReplicationTimeout: 500 * time.Millisecond,
		RepairInterval:     DefaultRepairInterval,
		Limits: Limits{
			MaxTimers:    DefaultMaxTimers,
			MaxInFlight:  100_000,
			MaxHeldBytes: DefaultMaxHeldBytes,
		},
	}
}

// Validate reports the first invalid field, naming it and its value.
func (c Config) Validate() error {
	if c.Address == "" {
		return fmt.Errorf("node: config Address is empty")
	}
	if _, err := url.Parse("http://" + c.Address); err != nil {
		return fmt.Errorf("node: config Address %q is not host:port: %w", c.Address, err)
	}
	if c.InstanceID < AutoInstanceID || c.InstanceID > MaxInstanceID {
		return fmt.Errorf("node: config InstanceID %d is not in 0..%d (or AutoInstanceID)", c.InstanceID, MaxInstanceID)
	}
	if err := c.CheckKeys(); err != nil {
		return err
	}
	if _, err := c.CallbackPolicy(); err != nil {
		return err
	}
	if c.MaxMessageAge <= 0 {
		return fmt.Errorf("node: config MaxMessageAge %v is not positive", c.MaxMessageAge)
	}
	if c.MaxClockSkew < 0 {
		return fmt.Errorf("node: config MaxClockSkew %v is negative", c.MaxClockSkew)
	}
	if c.MaxClockLead <= 0 {
		return fmt.Errorf("node: config MaxClockLead %v is not positive", c.MaxClockLead)
	}
	if c.ReplicationTimeout <= 0 {
		return fmt.Errorf("node: config ReplicationTimeout %v is not positive", c.ReplicationTimeout)
	}
	if c.RepairInterval < 0 {
		return fmt.Errorf("node: config RepairInterval %v is negative", c.RepairInterval)
	}
	if c.Limits.MaxTimers <= 0 {
		return fmt.Errorf("node: config Limits.MaxTimers %d is not positive", c.Limits.MaxTimers)
	}
	if c.RepairPage < 0 || c.RepairPage > MaxRepairEntries {
		return fmt.Errorf("node: config RepairPage %d is not in 0..%d", c.RepairPage, MaxRepairEntries)
	}
	if c.ResyncPage < 0 || c.ResyncPage > MaxResyncPage {
		return fmt.Errorf("node: config ResyncPage %d is not in 0..%d", c.ResyncPage, MaxResyncPage)
	}
	if c.Limits.MaxInFlight <= 0 {
		return fmt.Errorf("node: config Limits.MaxInFlight %d is not positive", c.Limits.MaxInFlight)
	}
	if c.Limits.MaxHeldBytes <= 0 {
		return fmt.Errorf("node: config Limits.MaxHeldBytes %d is not positive", c.Limits.MaxHeldBytes)
	}
	if c.Clock == nil {
		return fmt.Errorf("node: config Clock is nil")
	}
	if c.Network == nil {
		return fmt.Errorf("node: config Network is nil")
	}
	if err := c.Cluster.validate(c.Address); err != nil {
		return err
	}
	_, err := InstanceFor(c.Address, c.InstanceID, c.Cluster.withSelf(c.Address))
	return err
}

func (m Membership) validate(self string) error {
	seen := map[string]bool{}
	for _, list := range [][]string{m.Nodes, m.Joining, m.Leaving} {
		for _, a := range list {
			if a == "" {
				return fmt.Errorf("node: config Cluster has an empty address")
			}
			if seen[a] {
				return fmt.Errorf("node: config Cluster lists %q twice", a)
			}
			seen[a] = true
		}
	}
	if len(seen) > 0 && len(m.Nodes)+len(m.Joining) == 0 {
		return fmt.Errorf("node: config Cluster has only leaving nodes")
	}
	if len(seen) > 0 && !seen[self] {
		return fmt.Errorf("node: config Cluster does not list this node's Address %q", self)
	}
	return nil
}

// All returns every member, steady, joining and leaving, in that order.
func (m Membership) All() []string {
	return slices.Concat(m.Nodes, m.Joining, m.Leaving)
}

// withSelf returns the membership, or a cluster of just self if it is empty.
func (m Membership) withSelf(self string) Membership {
	if len(m.Nodes)+len(m.Joining)+len(m.Leaving) == 0 {
		return Membership{Nodes: []string{self}}
	}
	return Membership{
		Nodes:   slices.Clone(m.Nodes),
		Joining: slices.Clone(m.Joining),
		Leaving: slices.Clone(m.Leaving),
	}
}

// sameMembership reports whether a and b list the same nodes in each
// role, in the same order.
func sameMembership(a, b Membership) bool {
	return slices.Equal(a.Nodes, b.Nodes) && slices.Equal(a.Joining, b.Joining) && slices.Equal(a.Leaving, b.Leaving)
}
