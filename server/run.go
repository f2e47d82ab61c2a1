package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/config"
	"github.com/chronos-timer/chronos/server/lifecycle"
	"github.com/chronos-timer/chronos/server/observe"
	"github.com/chronos-timer/chronos/server/transport"
)

// HTTP server limits. Bodies are at most wire.MaxBodyBytes, so reading a
// request never needs long; writing waits for the node's reply first.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeSlack        = 10 * time.Second
	idleTimeout       = 120 * time.Second
)

// Server is one production node: the node itself, driven through a Serial
// by the real clock, the HTTP handler and the HTTP client.
type Server struct {
	log    *slog.Logger
	serial *Serial
	client *transport.Client
	http   *http.Server
	// peers follows the reachability of the other members and sites.
	peers *observe.Peers
	// certs is the TLS material in use; nil without TLS (tls.go).
	certs *certs
	// storage keeps the node's timers on disk; nil keeps them in memory.
	storage *diskStorage

	// mu guards cfg, which Reload replaces; the node has its own lock.
	mu   sync.Mutex
	cfg  config.Node
	node *node.Node
}

// New builds the node and its adapters for cfg. It does not listen yet.
// Derived settings are filled in as config.Flags.Load does, so an embedder may
// pass a hand-built config.Node.
func New(cfg config.Node, log *slog.Logger) (*Server, error) {
	if err := cfg.Normalize(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The node tags its own records with its address; the adapter's are
	// tagged here.
	nodeLog := log
	log = log.With("node", cfg.Localhost)
	s := &Server{log: log, serial: NewSerial(), cfg: cfg}
	var err error
	if s.certs, err = newCerts(cfg); err != nil {
		return nil, err
	}
	reg := observe.NewRegistry()
	s.client = transport.NewClient(s.serial.Do, reg, log)
	s.client.SetDNS(cfg.DNS)
	if err := secure(s.client, cfg, s.certs); err != nil {
		return nil, err
	}
	s.peers = observe.NewPeers(log, time.Now)
	s.peers.Track(peerAddrs(cfg))
	clk := NewClock(cfg.Clock, s.serial)
	nc := nodeConfig(cfg, clk, s.peers.Watch(s.client), nodeLog)
	if cfg.StorageDir != "" {
		if s.storage, err = openStorage(storageFolder(cfg.StorageDir, cfg.Localhost), s.serial, log); err != nil {
			return nil, err
		}
		nc.Storage = s.storage
	}
	// Under the lock: the node may arm an alarm while it is being built.
	s.serial.Do(func() { s.node, err = node.New(nc) })
	if err == nil && s.storage != nil {
		// Before the node serves anything: it pops its timers again, and
		// the start-up resync fetches what it missed.
		err = s.storage.recover(s.node)
	}
	if err != nil {
		return nil, fmt.Errorf("server: build node: %w", err)
	}
	s.register(reg)
	api := transport.NewHandler(s.node, s.serial.Do, cfg.ReplyTimeout, log)
	s.http = &http.Server{
		Handler:           observe.CountRequests(reg, withPeerCerts(s.certs, observe.WithStatus(s.Status, observe.WithMetrics(reg, api)))),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      cfg.ReplyTimeout + writeSlack,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    transport.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// Serve serves on ln until ctx is done, then shuts down gracefully: it stops
// accepting, lets requests in progress finish within the shutdown timeout,
// and only then stops the node. It returns nil after a clean shutdown, or
// the error that stopped it (the listener failed, the node panicked).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.logStart()
	ln = tlsListener(s.certs, ln)
	served := make(chan error, 1)
	go func() { served <- s.http.Serve(ln) }()
	s.log.Info("serving", "address", ln.Addr().String())
	// At start-up the node fetches the timers it holds from its peers:
	// a restarted node repopulates, a joining one takes its share.
	s.serial.Do(func() { s.node.Resync(true) })

	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		err = fmt.Errorf("server: serve: %w", err)
	case <-s.serial.Failed():
		err = s.serial.Err()
	}
	if shutErr := s.shutdown(); err == nil {
		err = shutErr
	}
	// A panic is reported even if a stop request raced it.
	if failure := s.serial.Err(); failure != nil {
		err = failure
	}
	return err
}

// logStart logs what the node starts with (never the cluster key, only
// whether there is one), and warns loudly when a node in a cluster has
// no key: its internal API then trusts the members' addresses alone.
func (s *Server) logStart() {
	cfg := s.config()
	var id int
	var derived bool
	s.serial.Do(func() { id, derived = s.node.Instance() })
	m := cfg.Cluster
	if len(m.All()) == 0 {
		m.Nodes = []string{cfg.Localhost}
	}
	sites := make([]string, 0, len(cfg.RemoteSites))
	for _, r := range cfg.RemoteSites {
		sites = append(sites, r.Name+"="+r.Address)
	}
	var hosts any = "any"
	if len(cfg.CallbackHosts) > 0 {
		hosts = cfg.CallbackHosts
	}
	nc := nodeConfig(cfg, nil, nil, nil)
	s.log.Info("starting", "instance", id, "instance_derived", derived,
		"nodes", m.Nodes, "joining", m.Joining, "leaving", m.Leaving,
		"local_site", cfg.LocalSite, "remote_sites", sites, "replicate_across_sites", cfg.ReplicateAcrossSites,
		"key_set", cfg.ClusterKey != "", "accepted_key_set", cfg.AcceptedKey != "", "tls", s.certs != nil, "mutual_tls", s.certs.mutual(), "callback_hosts", hosts,
		"max_timers", nc.Limits.MaxTimers, "max_timer_bytes", nc.Limits.MaxHeldBytes,
		"max_message_age", nc.MaxMessageAge, "max_clock_skew", nc.MaxClockSkew, "static DNS names", cfg.DNS.Len(),
		"log folder", cfg.LogFolder, "pid file", cfg.PIDFile, "storage", storageOf(cfg))
	if len(sites) > 0 && !cfg.ReplicateAcrossSites {
		s.log.Warn("remote sites are configured but [sites] replicate_timers_across_sites is false (the default, as in the original): " +
			"timers created here are not replicated to them; set it to true to replicate")
	}
	if cfg.ClusterKey == "" && (len(m.All()) > 1 || len(sites) > 0) {
		s.log.Warn("no cluster key: the internal API (replication, pop notices, tombstones, resync) trusts the members' IP addresses alone, " +
			"so anyone who can send from one can write any timer, and members named by host name are refused; " +
			"set the same [cluster] key, at least 16 bytes, in the cluster config file of every node and site, or pass --cluster-key-file")
	}
}

// storageOf says where cfg keeps the node's timers, for the start line.
func storageOf(cfg config.Node) string {
	if cfg.StorageDir == "" {
		return "memory only"
	}
	return storageFolder(cfg.StorageDir, cfg.Localhost)
}

func (s *Server) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.config().ShutdownTimeout)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if err != nil {
		_ = s.http.Close()
		err = fmt.Errorf("server: shutdown: %w", err)
	}
	// Late alarms and completions are dropped from here on.
	s.serial.Close()
	s.client.Close()
	if s.storage != nil {
		if serr := s.storage.Close(); serr != nil && err == nil {
			err = fmt.Errorf("server: storage: %w", serr)
		}
	}
	s.log.Info("stopped")
	return err
}

func (s *Server) config() config.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// Reload re-reads the cluster configuration and hands the new membership to
// the node, and the new log level to the logger (config.Node.Level), logging
// the lines of the file it does not read. On any error the node keeps its
// current membership and the logger its level.
func (s *Server) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, err := s.cfg.ReloadCluster()
	if err != nil {
		return err
	}
	if s.certs != nil {
		if err := s.certs.reload(); err != nil {
			return err
		}
		s.log.Info("TLS certificates reloaded")
	}
	config.LogWarnings(s.log, next.Warnings)
	var setErr error
	var id int
	var oldView, newView uint64
	if !s.serial.Do(func() {
		oldView = s.node.ViewID()
		if setErr = s.node.SetKeys(next.ClusterKey, next.AcceptedKey); setErr != nil {
			return
		}
		setErr = s.node.SetCluster(next.Cluster)
		id, _ = s.node.Instance()
		newView = s.node.ViewID()
	}) {
		return errors.New("server: node is stopped")
	}
	if setErr != nil {
		return fmt.Errorf("server: set cluster: %w", setErr)
	}
	prev := s.cfg
	s.cfg = next
	s.peers.Track(peerAddrs(next))
	changed := !sameMembership(prev.Cluster, next.Cluster)
	if changed {
		s.log.Info("membership changed", "old_view", observe.FormatView(oldView), "new_view", observe.FormatView(newView),
			"nodes", next.Cluster.Nodes, "joining", next.Cluster.Joining, "leaving", next.Cluster.Leaving,
			"added", added(prev.Cluster.All(), next.Cluster.All()), "removed", added(next.Cluster.All(), prev.Cluster.All()))
	}
	if next.ClusterKey != prev.ClusterKey || next.AcceptedKey != prev.AcceptedKey {
		s.log.Info("cluster keys changed", "key_set", next.ClusterKey != "", "accepted_key_set", next.AcceptedKey != "")
	}
	if next.Level != nil && next.LogLevel != prev.LogLevel {
		next.Level.Set(next.LogLevel)
		s.log.Info("log level changed", "from", prev.LogLevel, "to", next.LogLevel)
	}
	s.log.Info("cluster reloaded", "instance", id, "membership_changed", changed)
	return nil
}

// sameMembership reports whether a and b list the same nodes, joining and
// leaving, in the same order.
func sameMembership(a, b node.Membership) bool {
	return slices.Equal(a.Nodes, b.Nodes) && slices.Equal(a.Joining, b.Joining) && slices.Equal(a.Leaving, b.Leaving)
}

// added lists the addresses of to that from lacks.
func added(from, to []string) []string {
	var out []string
	for _, a := range to {
		if !slices.Contains(from, a) {
			out = append(out, a)
		}
	}
	return out
}

// Resync is asked for by SIGUSR1: the node rebalances its timers to the
// current membership (the original's active resynchronization, see
// docs/operations.md), ending any resync still running. GET /status and
// the chronos_resync_* metrics show its progress.
func (s *Server) Resync() {
	s.log.Info("resync requested")
	s.serial.Do(func() { s.node.Resync(false) })
}

// Run listens on cfg's bind address, writes the pid file, tells a waiting
// --daemon parent that it serves, and serves until ctx is done or SIGINT
// or SIGTERM arrives; it removes the pid file when it returns. SIGHUP
// reloads the cluster configuration; SIGUSR1 asks for a resync; SIGUSR2
// re-reads the DNS config file.
func Run(ctx context.Context, cfg config.Node, log *slog.Logger) error {
	srv, err := New(cfg, log)
	if err != nil {
		return err
	}
	applyMemoryLimit(cfg.MemoryLimit, srv.log)
	defer applyGCHeadroom(cfg.GCHeadroom, srv.log)()
	ln, release, err := listen(cfg, srv.log)
	if err != nil {
		return err
	}
	defer release()
	if cfg.PprofAddress != "" {
		pln, err := observe.ListenPprof(cfg.PprofAddress)
		if err != nil {
			return err
		}
		defer observe.ServePprof(context.WithoutCancel(ctx), pln, srv.log)()
	}
	ctx, stop := signal.NotifyContext(ctx, lifecycle.StopSignals...)
	defer stop()
	// Registered before serving, so that once "serving" is logged a SIGHUP
	// reloads instead of killing the process.
	sigs := make(chan os.Signal, 4)
	if len(lifecycle.ControlSignals) > 0 {
		signal.Notify(sigs, lifecycle.ControlSignals...)
		defer signal.Stop(sigs)
	}
	go srv.handleSignals(ctx, sigs)
	defer srv.watchDNS(ctx)()
	// Told once every signal is handled: the parent's return means a
	// SIGTERM stops the node cleanly.
	lifecycle.DaemonStarted(nil)
	return srv.Serve(ctx, ln)
}

// listen binds cfg's address and then writes the pid file, if any, so
// that a pid file names a process that serves. release removes the pid
// file.
func listen(cfg config.Node, log *slog.Logger) (ln net.Listener, release func(), err error) {
	ln, err = net.Listen("tcp", cfg.ListenAddress())
	if err != nil {
		return nil, nil, fmt.Errorf("server: listen: %w", err)
	}
	pid, err := lifecycle.CreatePIDFile(cfg.PIDFile)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	return ln, func() { pid.Remove(log) }, nil
}

// applyGCHeadroom starts keeping GOGC at the headroom pct (gctune.go),
// unless pct is 0 or the GOGC environment variable is set (the operator's
// choice), and returns what stops it.
func applyGCHeadroom(pct int, log *slog.Logger) (stop func()) {
	if v, ok := os.LookupEnv("GOGC"); ok && pct > 0 {
		log.Info("gc_headroom_ignored", "percent", pct, "GOGC", v)
		return func() {}
	}
	return startGCTuner(pct, log)
}

// applyMemoryLimit sets the process's soft memory limit to limit bytes, if
// not 0: it is process-wide, so Run sets it, not New.
func applyMemoryLimit(limit int64, log *slog.Logger) {
	if limit == 0 {
		return
	}
	prev := debug.SetMemoryLimit(limit)
	log.Info("memory_limit_set", "bytes", limit, "previous", prev)
}
