package config

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
	// command returns once the node serves (lifecycle.Daemonize).
	Daemon bool

	settings settings
	// deferred are the errors of secret flags, by setting, reported by
	// Load; valueFiles are the paths given to file flags (setting.fileFlag),
	// read by Load.
	deferred   map[string]error
	valueFiles map[string]string
}

// Register defines the flags on fs: the files', then one for each setting
// of the table that has one.
func (f *Flags) Register(fs *flag.FlagSet) {
	f.registerFiles(fs)
	fs.StringVar(&f.PIDFile, "pidfile", "", "`path` of the file to write the process ID to once the node serves; removed on a clean exit, and locked (path.lock) against a second process")
	fs.BoolVar(&f.Daemon, "daemon", false, "run in the background: return once the node serves, with the pid file written; logs go to the [logging] folder only")
	f.settings, f.deferred, f.valueFiles = settings{}, map[string]error{}, map[string]string{}
	for i := range table {
		s := &table[i]
		if s.flag == "" {
			continue
		}
		fs.Func(s.flag, s.flagUsage(), func(v string) error { return f.set(s, v) })
		if s.fileFlag != "" {
			fs.Func(s.fileFlag, s.fileUsage, func(v string) error {
				f.valueFiles[s.id()] = v
				return nil
			})
		}
	}
}

// set takes one use of s's flag. The first use of a list flag replaces
// the files' list rather than adding to it, as the flags are one layer.
func (f *Flags) set(s *setting, v string) error {
	if s.looseFlag {
		f.settings.give(s, strings.TrimSpace(v))
		return nil
	}
	x, err := s.bind.parse("--"+s.flag, v)
	if s.secret {
		// The flag package would print a refused value, so the error
		// waits for Load, which never prints it.
		f.deferred[s.id()] = err
		err = nil
	}
	if err != nil {
		return err
	}
	f.settings.give(s, x)
	return nil
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

// flagErrors returns the first deferred flag error, in table order.
func (f *Flags) flagErrors() error {
	for i := range table {
		if err := f.deferred[table[i].id()]; err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}
	return nil
}

// readValueFiles takes the value of each setting whose file flag is
// given from that file (--cluster-key-file).
func (f *Flags) readValueFiles() error {
	for i := range table {
		s := &table[i]
		path := f.valueFiles[s.id()]
		if path == "" {
			continue
		}
		if _, ok := f.settings[s.id()]; ok {
			return fmt.Errorf("server: --%s and --%s both given; give one", s.flag, s.fileFlag)
		}
		data, err := readFile(strings.ReplaceAll(s.fileFlag, "-", " "), path)
		if err != nil {
			return err
		}
		x, err := s.bind.parse("--"+s.fileFlag+" "+path, string(data))
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		f.settings.give(s, x)
	}
	return nil
}

// Load builds the configuration: defaults, then the configuration files
// merged as the original merges them (Node.LocalConfigFile), then the
// flags; it fills derived fields, validates the result and reads the DNS
// file. The parts of the files that are not read are in Node.Warnings,
// for the caller to log (LogWarnings).
func (f *Flags) Load() (Node, error) {
	if err := f.flagErrors(); err != nil {
		return Node{}, err
	}
	if err := f.readValueFiles(); err != nil {
		return Node{}, err
	}
	cfg := Default()
	cfg.StorageDir = DefaultStorageDir
	cfg.LocalConfigFile = f.LocalConfigFile
	cfg.ClusterConfigFile = f.ClusterConfigFile
	cfg.SharedConfigFile = f.SharedConfigFile
	cfg.DNSConfigFile = f.DNSConfigFile
	cfg.PIDFile = f.PIDFile
	cfg.flags = f.settings
	absent, err := cfg.loadFiles()
	if err != nil {
		return Node{}, err
	}
	cfg.absent = absent
	if err := cfg.loadDNS(); err != nil {
		return Node{}, err
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
func (c Node) configFiles() []configFile {
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
func (c *Node) loadFiles() (absent []string, err error) {
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
	if err := c.Normalize(); err != nil {
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
func (c Node) ReloadCluster() (Node, error) {
	for _, f := range c.configFiles() {
		if f.path == "" || slices.Contains(c.absent, f.path) {
			continue
		}
		if _, err := os.Stat(f.path); errors.Is(err, os.ErrNotExist) {
			return Node{}, fmt.Errorf("server: %s %s does not exist any more; restore it", f.what, f.path)
		}
	}
	fresh := Default()
	fresh.LocalConfigFile = c.LocalConfigFile
	fresh.ClusterConfigFile = c.ClusterConfigFile
	fresh.SharedConfigFile = c.SharedConfigFile
	fresh.flags = c.flags
	if _, err := fresh.loadFiles(); err != nil {
		return Node{}, err
	}
	if fresh.Localhost != c.Localhost {
		return Node{}, fmt.Errorf("server: localhost %q differs from %q; restart to change it", fresh.Localhost, c.Localhost)
	}
	if fresh.LocalSite != c.LocalSite || !slices.Equal(fresh.RemoteSites, c.RemoteSites) || fresh.ReplicateAcrossSites != c.ReplicateAcrossSites {
		return Node{}, errors.New("server: sites changed; restart to change them")
	}
	next := c
	next.Cluster = fresh.Cluster
	// The keys reload, so that a rotation needs no restart
	// (docs/operations.md).
	next.ClusterKey, next.AcceptedKey = fresh.ClusterKey, fresh.AcceptedKey
	next.LogLevel = fresh.LogLevel
	next.Warnings = fresh.Warnings
	if err := next.Validate(); err != nil {
		return Node{}, err
	}
	return next, nil
}
