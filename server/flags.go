package server

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
)

// The original's paths of its files, which the flags default to.
const (
	DefaultLocalConfigFile   = "/etc/chronos/chronos.conf"
	DefaultClusterConfigFile = "/etc/chronos/chronos_cluster.conf"
	DefaultSharedConfigFile  = "/etc/chronos/chronos_shared.conf"
	DefaultDNSConfigFile     = "/etc/clearwater/dns.json"
)

// Flags are the command-line settings. Each overrides the same setting from
// the configuration files, whatever order they come in.
type Flags struct {
	// LocalConfigFile is chronos.conf, ClusterConfigFile
	// chronos_cluster.conf, SharedConfigFile chronos_shared.conf and
	// DNSConfigFile dns.json. Empty means none; so does a file that does
	// not exist, as in the original (with a warning, unless it is the
	// default path).
	LocalConfigFile   string
	ClusterConfigFile string
	SharedConfigFile  string
	DNSConfigFile     string
	// PIDFile receives the process ID of the serving process (--pidfile).
	PIDFile string
	// Daemon asks the process to run in the background (--daemon): the
	// command returns once the node serves (Daemonize).
	Daemon bool

	settings settings
	// keyErr is the --cluster-key error, reported by Load; keyFile is
	// --cluster-key-file, read by Load.
	keyErr  error
	keyFile string
}

// Register defines the flags on fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	f.registerFiles(fs)
	fs.StringVar(&f.PIDFile, "pidfile", "", "`path` of the file to write the process ID to once the node serves; removed on a clean exit, and locked (path.lock) against a second process")
	fs.BoolVar(&f.Daemon, "daemon", false, "run in the background: return once the node serves, with the pid file written; logs go to the [logging] folder only")
	fs.Func("log-folder", "`folder` to write the log file "+LogFileName+" to ([logging] folder; default none: stderr only)", func(v string) error {
		d, err := parseFolder("--log-folder", v)
		f.settings.logFolder.set(d)
		return err
	})
	fs.Func("replicate-timers-across-sites", "whether timers are replicated to the remote sites, `true` or false ([sites] replicate_timers_across_sites; default false, as in the original)", func(v string) error {
		b, err := parseBool("--replicate-timers-across-sites", v)
		f.settings.replicate.set(b)
		return err
	})
	fs.Func("bind-address", "`host` to listen on (default 127.0.0.1)", func(v string) error {
		f.settings.bindAddress.set(strings.TrimSpace(v))
		return nil
	})
	fs.Func("bind-port", "`port` to listen on (default 7253)", func(v string) error {
		p, err := parsePort("--bind-port", v)
		f.settings.bindPort.set(p)
		return err
	})
	fs.Func("log-level", "log `level`: 0-5 or error, warning, status, info, verbose, debug (default 2)", func(v string) error {
		l, err := parseLevel("--log-level", v)
		f.settings.logLevel.set(l)
		return err
	})
	fs.Func("log-format", "log line `format`: text (key=value) or json ([logging] format; default text)", func(v string) error {
		format, err := parseLogFormat("--log-format", v)
		f.settings.logFormat.set(format)
		return err
	})
	fs.Func("instance-id", "this node's instance `number`, unique in the cluster (0-1023)", func(v string) error {
		id, err := parseInstanceID("--instance-id", v)
		f.settings.instanceID.set(id)
		return err
	})
	fs.Func("memory-limit", "soft memory `limit` of the process, e.g. 2GiB (GOMEMLIMIT's syntax; default none: GOMEMLIMIT, if set, applies)", func(v string) error {
		m, err := parseMemoryLimit("--memory-limit", v)
		f.settings.memoryLimit.set(m)
		return err
	})
	fs.Func("storage-dir", "`folder` the node keeps its timers in across restarts, in a subfolder per node address; empty keeps them in memory only (default chronos-data)", func(v string) error {
		d, err := parseStorageDir("--storage-dir", v)
		f.settings.storageDir.set(d)
		return err
	})
	fs.Func("localhost", "this node's `address` as the cluster knows it (default bind address and port)", func(v string) error {
		f.settings.localhost.set(strings.TrimSpace(v))
		return nil
	})
	registerList(fs, "allowed-callback-host", "allowed callback `host`, host:port or IP prefix (e.g. 127.0.0.0/8); repeat or separate with commas (default any)", parseCallbackHosts, &f.settings.callbacks)
	registerList(fs, "node", "cluster member `address`; repeat or separate with commas", parseAddresses, &f.settings.nodes)
	registerList(fs, "joining", "joining node `address`; repeat or separate with commas", parseAddresses, &f.settings.joining)
	registerList(fs, "leaving", "leaving node `address`; repeat or separate with commas", parseAddresses, &f.settings.leaving)
	fs.Func("local-site", "this node's site `name` (default site1)", func(v string) error {
		f.settings.localSite.set(strings.TrimSpace(v))
		return nil
	})
	fs.Func("remote-site", "remote site as `name=address`; repeat for more", func(v string) error {
		s, err := parseSite("--remote-site", v)
		f.settings.remoteSites.set(append(f.settings.remoteSites.v, s))
		return err
	})
	fs.Func("cluster-key", "`secret` shared by every node for the internal API, at least 16 bytes (prefer [cluster] key: a flag shows in the process list)", func(v string) error {
		// The flag package would print a refused value, so the error
		// waits for Load, which never prints the key.
		k, err := parseClusterKey("--cluster-key", v)
		f.settings.clusterKey.set(k)
		f.keyErr = err
		return nil
	})
	fs.StringVar(&f.keyFile, "cluster-key-file", "", "`path` of a file holding the cluster key, which then shows in no process list")
	for _, t := range []struct {
		name, usage string
		dst         *opt[string]
	}{
		{"tls-cert-file", "`path` of this node's certificate chain, PEM: serve HTTPS only ([http] tls_cert_file)", &f.settings.tlsCert},
		{"tls-key-file", "`path` of this node's private key, PEM ([http] tls_key_file)", &f.settings.tlsKey},
		{"tls-ca-file", "`path` of the CA certificate that signs the members' certificates: mutual TLS between nodes ([cluster] tls_ca_file)", &f.settings.tlsCA},
	} {
		fs.Func(t.name, t.usage, func(v string) error {
			p, err := parseFolder("--"+t.name, v)
			if err == nil {
				t.dst.set(p)
			}
			return err
		})
	}
}

// registerFiles defines the flags naming the configuration files.
func (f *Flags) registerFiles(fs *flag.FlagSet) {
	fs.StringVar(&f.LocalConfigFile, "local-config-file", DefaultLocalConfigFile,
		"`path` of chronos.conf, the node's own file; empty for none. A file that does not exist gives no settings, as in the original")
	fs.StringVar(&f.ClusterConfigFile, "cluster-config-file", DefaultClusterConfigFile,
		"`path` of chronos_cluster.conf, the cluster's file, whose membership is re-read on SIGHUP; empty for none. "+
			"Any section may sit in any of the three INI files: a setting is taken from the cluster file first, then the local file, "+
			"then the shared file, and a flag overrides them all")
	fs.StringVar(&f.SharedConfigFile, "shared-config-file", DefaultSharedConfigFile,
		"`path` of chronos_shared.conf, the site-wide file; empty for none")
	fs.StringVar(&f.DNSConfigFile, "dns-config-file", DefaultDNSConfigFile,
		"`path` of dns.json, static DNS records (A, CNAME) consulted before the system resolver for callbacks, peers and sites; empty for none")
}

// readKeyFile takes the cluster key from --cluster-key-file, if given.
func (f *Flags) readKeyFile() error {
	if f.keyFile == "" {
		return nil
	}
	if f.settings.clusterKey.ok {
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
	f.settings.clusterKey.set(k)
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

// Load builds the configuration: defaults, then the configuration files
// merged as the original merges them (Config.LocalConfigFile), then the
// flags; it fills derived fields, validates the result and reads the DNS
// file. The parts of the files that are not read are in Config.Warnings,
// for the caller to log (LogWarnings).
func (f *Flags) Load() (Config, error) {
	if f.keyErr != nil {
		return Config{}, fmt.Errorf("server: %w", f.keyErr)
	}
	if err := f.readKeyFile(); err != nil {
		return Config{}, err
	}
	cfg := DefaultConfig()
	cfg.StorageDir = DefaultStorageDir
	cfg.LocalConfigFile = f.LocalConfigFile
	cfg.ClusterConfigFile = f.ClusterConfigFile
	cfg.SharedConfigFile = f.SharedConfigFile
	cfg.DNSConfigFile = f.DNSConfigFile
	cfg.PIDFile = f.PIDFile
	cfg.flags = f.settings
	absent, err := cfg.loadFiles()
	if err != nil {
		return Config{}, err
	}
	cfg.absent = absent
	if err := cfg.loadDNS(); err != nil {
		return Config{}, err
	}
	cfg.Level = new(slog.LevelVar)
	cfg.Level.Set(cfg.LogLevel)
	return cfg, nil
}

// configFile is one of the INI configuration files.
type configFile struct {
	what, path, defaultPath string
}

// configFiles lists c's INI files in the order their warnings are
// reported.
func (c Config) configFiles() []configFile {
	return []configFile{
		{"local config file", c.LocalConfigFile, DefaultLocalConfigFile},
		{"cluster config file", c.ClusterConfigFile, DefaultClusterConfigFile},
		{"shared config file", c.SharedConfigFile, DefaultSharedConfigFile},
	}
}

// mergeOrder indexes configFiles in the order the files are applied, each
// overriding the ones before: the shared file, the local file, the cluster
// file. The original's option parser keeps the first value it is given
// and reads the cluster file first, then the local file, then the shared
// file, so a setting the cluster file gives wins. A list is one setting:
// the file that gives a node line gives every node.
var mergeOrder = [...]int{2, 0, 1}

// loadFiles reads the configuration files, merges them over c, applies the
// flags over them, normalizes and validates. It returns the files that do
// not exist; one given on the command line is also a warning.
func (c *Config) loadFiles() (absent []string, err error) {
	files := c.configFiles()
	layers := make([]settings, len(files))
	for i, file := range files {
		if file.path == "" {
			continue
		}
		data, err := readFile(file.what, file.path)
		if errors.Is(err, os.ErrNotExist) {
			absent = append(absent, file.path)
			if file.path != file.defaultPath {
				c.Warnings = append(c.Warnings, Warning{File: file.path, Kind: MissingFile, Message: "configuration file not found; its settings take their defaults"})
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		s, ws, err := parseFile(data, file.path)
		if err != nil {
			return nil, fmt.Errorf("server: %s: %w", file.path, err)
		}
		layers[i] = s
		c.Warnings = append(c.Warnings, ws...)
	}
	for _, i := range mergeOrder {
		layers[i].apply(c)
	}
	c.flags.apply(c)
	if err := c.normalize(); err != nil {
		return nil, err
	}
	return absent, c.Validate()
}

// ReloadCluster re-reads the configuration files as at start-up and
// returns the configuration with the new membership and log level, and in
// Warnings the parts of the files that are not read. Only those are
// taken: other settings are read at start. The node's own address, the sites and
// the cluster key cannot change while it runs, and a file read at start
// cannot vanish: either is an error.
func (c Config) ReloadCluster() (Config, error) {
	for _, f := range c.configFiles() {
		if f.path == "" || slices.Contains(c.absent, f.path) {
			continue
		}
		if _, err := os.Stat(f.path); errors.Is(err, os.ErrNotExist) {
			return Config{}, fmt.Errorf("server: %s %s does not exist any more; restore it", f.what, f.path)
		}
	}
	fresh := DefaultConfig()
	fresh.LocalConfigFile = c.LocalConfigFile
	fresh.ClusterConfigFile = c.ClusterConfigFile
	fresh.SharedConfigFile = c.SharedConfigFile
	fresh.flags = c.flags
	if _, err := fresh.loadFiles(); err != nil {
		return Config{}, err
	}
	if fresh.Localhost != c.Localhost {
		return Config{}, fmt.Errorf("server: localhost %q differs from %q; restart to change it", fresh.Localhost, c.Localhost)
	}
	if fresh.LocalSite != c.LocalSite || !slices.Equal(fresh.RemoteSites, c.RemoteSites) || fresh.ReplicateAcrossSites != c.ReplicateAcrossSites {
		return Config{}, errors.New("server: sites changed; restart to change them")
	}
	next := c
	next.Cluster = fresh.Cluster
	// The keys reload, so that a rotation needs no restart
	// (docs/operations.md).
	next.ClusterKey, next.AcceptedKey = fresh.ClusterKey, fresh.AcceptedKey
	next.LogLevel = fresh.LogLevel
	next.Warnings = fresh.Warnings
	if err := next.Validate(); err != nil {
		return Config{}, err
	}
	return next, nil
}
