package server

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/chronos-timer/chronos/node"
)

// Flags are the command-line settings. Each overrides the same setting from
// the configuration files, whatever order they come in.
type Flags struct {
	// LocalConfigFile is chronos.conf; empty means none.
	LocalConfigFile string
	// ClusterConfigFile is chronos_cluster.conf; empty means none.
	ClusterConfigFile string

	local   settings
	cluster settings
	// keyErr is the --cluster-key error, reported by Load; keyFile is
	// --cluster-key-file, read by Load.
	keyErr  error
	keyFile string
}

// Register defines the flags on fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.LocalConfigFile, "local-config-file", "", "`path` of chronos.conf ([http], [logging], [identity], [callbacks], [limits])")
	fs.StringVar(&f.ClusterConfigFile, "cluster-config-file", "", "`path` of chronos_cluster.conf ([cluster], [sites]); re-read on SIGHUP")
	fs.Func("bind-address", "`host` to listen on (default 127.0.0.1)", func(v string) error {
		f.local.bindAddress.set(strings.TrimSpace(v))
		return nil
	})
	fs.Func("bind-port", "`port` to listen on (default 7253)", func(v string) error {
		p, err := parsePort("--bind-port", v)
		f.local.bindPort.set(p)
		return err
	})
	fs.Func("log-level", "log `level`: 0-5 or error, warning, status, info, verbose, debug (default 2)", func(v string) error {
		l, err := parseLevel("--log-level", v)
		f.local.logLevel.set(l)
		return err
	})
	fs.Func("instance-id", "this node's instance `number`, unique in the cluster (0-1023)", func(v string) error {
		id, err := parseInstanceID("--instance-id", v)
		f.local.instanceID.set(id)
		return err
	})
	fs.Func("memory-limit", "soft memory `limit` of the process, e.g. 2GiB (GOMEMLIMIT's syntax; default none: GOMEMLIMIT, if set, applies)", func(v string) error {
		m, err := parseMemoryLimit("--memory-limit", v)
		f.local.memoryLimit.set(m)
		return err
	})
	fs.Func("localhost", "this node's `address` as the cluster knows it (default bind address and port)", func(v string) error {
		f.cluster.localhost.set(strings.TrimSpace(v))
		return nil
	})
	registerList(fs, "allowed-callback-host", "allowed callback `host`, host:port or IP prefix (e.g. 127.0.0.0/8); repeat or separate with commas (default any)", parseCallbackHosts, &f.local.callbacks)
	registerList(fs, "node", "cluster member `address`; repeat or separate with commas", parseAddresses, &f.cluster.nodes)
	registerList(fs, "joining", "joining node `address`; repeat or separate with commas", parseAddresses, &f.cluster.joining)
	registerList(fs, "leaving", "leaving node `address`; repeat or separate with commas", parseAddresses, &f.cluster.leaving)
	fs.Func("local-site", "this node's site `name` (default site1)", func(v string) error {
		f.cluster.localSite.set(strings.TrimSpace(v))
		return nil
	})
	fs.Func("remote-site", "remote site as `name=address`; repeat for more", func(v string) error {
		s, err := parseSite("--remote-site", v)
		f.cluster.remoteSites.set(append(f.cluster.remoteSites.v, s))
		return err
	})
	fs.Func("cluster-key", "`secret` shared by every node for the internal API, at least 16 bytes (prefer [cluster] key: a flag shows in the process list)", func(v string) error {
		// The flag package would print a refused value, so the error
		// waits for Load, which never prints the key.
		k, err := parseClusterKey("--cluster-key", v)
		f.cluster.clusterKey.set(k)
		f.keyErr = err
		return nil
	})
	fs.StringVar(&f.keyFile, "cluster-key-file", "", "`path` of a file holding the cluster key, which then shows in no process list")
}

// readKeyFile takes the cluster key from --cluster-key-file, if given.
func (f *Flags) readKeyFile() error {
	if f.keyFile == "" {
		return nil
	}
	if f.cluster.clusterKey.ok {
		return errors.New("server: --cluster-key and --cluster-key-file both given; give one")
	}
	data, err := readFile("cluster key file", f.keyFile)
	if err != nil {
		return err
	}
	k, err := parseClusterKey("--cluster-key-file "+f.keyFile, string(data))
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	f.cluster.clusterKey.set(k)
	return nil
}

// registerList defines a repeatable list flag whose values parse reads.
// The first use replaces the file's list rather than adding to it.
func registerList(fs *flag.FlagSet, name, usage string, parse func(field, v string) ([]string, error), dst *opt[[]string]) {
	fs.Func(name, usage, func(v string) error {
		items, err := parse("--"+name, v)
		dst.set(append(dst.v, items...))
		return err
	})
}

// Load builds the configuration: defaults, then chronos.conf, then
// chronos_cluster.conf, then the flags; it fills derived fields and
// validates the result. The lines of either file that are not read are in
// Config.Warnings, for the caller to log (LogWarnings).
func (f *Flags) Load() (Config, error) {
	if f.keyErr != nil {
		return Config{}, fmt.Errorf("server: %w", f.keyErr)
	}
	if err := f.readKeyFile(); err != nil {
		return Config{}, err
	}
	cfg := DefaultConfig()
	if f.LocalConfigFile != "" {
		data, err := readFile("local config file", f.LocalConfigFile)
		if err != nil {
			return Config{}, err
		}
		s, ws, err := parseLocal(data, f.LocalConfigFile)
		if err != nil {
			return Config{}, fmt.Errorf("server: %s: %w", f.LocalConfigFile, err)
		}
		s.apply(&cfg)
		cfg.Warnings = ws
	}
	f.local.apply(&cfg)
	cfg.ClusterConfigFile = f.ClusterConfigFile
	cfg.clusterFlags = f.cluster
	if err := cfg.loadCluster(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// loadCluster reads the cluster file (if any), applies the cluster flags
// over it, normalizes and validates.
func (c *Config) loadCluster() error {
	if c.ClusterConfigFile != "" {
		data, err := readFile("cluster config file", c.ClusterConfigFile)
		if err != nil {
			return err
		}
		s, ws, err := parseCluster(data, c.ClusterConfigFile)
		if err != nil {
			return fmt.Errorf("server: %s: %w", c.ClusterConfigFile, err)
		}
		s.apply(c)
		c.Warnings = append(c.Warnings, ws...)
	}
	c.clusterFlags.apply(c)
	if err := c.normalize(); err != nil {
		return err
	}
	return c.Validate()
}

// ReloadCluster re-reads the cluster configuration as at start-up and
// returns the configuration with the new membership, and in Warnings the
// lines of the cluster file that are not read. The node's own address,
// the sites and the cluster key cannot change while it runs: a change to
// them is an error.
func (c Config) ReloadCluster() (Config, error) {
	next := c
	next.Localhost = ""
	next.Cluster = node.Membership{}
	next.LocalSite = DefaultConfig().LocalSite
	next.RemoteSites = nil
	next.ClusterKey = ""
	next.Warnings = nil
	if err := next.loadCluster(); err != nil {
		return Config{}, err
	}
	if next.Localhost != c.Localhost {
		return Config{}, fmt.Errorf("server: localhost %q differs from %q; restart to change it", next.Localhost, c.Localhost)
	}
	if next.LocalSite != c.LocalSite || !slices.Equal(next.RemoteSites, c.RemoteSites) {
		return Config{}, errors.New("server: sites changed; restart to change them")
	}
	if next.ClusterKey != c.ClusterKey {
		return Config{}, errors.New("server: cluster key changed; restart to change it")
	}
	return next, nil
}
