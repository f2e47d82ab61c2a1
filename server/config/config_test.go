package config

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chronos-timer/chronos/node"
)

// writeFile writes content to a new file in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	// dir "" means name is already a path.
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// load runs the flag and file pipeline of cmd/chronos: files given by
// content ("" means no file), then args.
func load(t *testing.T, local, cluster string, args ...string) (Node, error) {
	t.Helper()
	return loadFiles(t, files{local: local, cluster: cluster}, args...)
}

// files are the contents of the configuration files; "" means no file.
type files struct {
	local, cluster, shared, dns string
}

// loadFiles runs the flag and file pipeline of cmd/chronos: the files
// given, then args. The files not given are none, whatever the machine's
// /etc holds.
func loadFiles(t *testing.T, fl files, args ...string) (Node, error) {
	t.Helper()
	dir := t.TempDir()
	var fileArgs []string
	for _, f := range []struct{ flag, name, content string }{
		{"--local-config-file", "chronos.conf", fl.local},
		{"--cluster-config-file", "chronos_cluster.conf", fl.cluster},
		{"--shared-config-file", "chronos_shared.conf", fl.shared},
		{"--dns-config-file", "dns.json", fl.dns},
	} {
		path := ""
		if f.content != "" {
			path = writeFile(t, dir, f.name, f.content)
		}
		fileArgs = append(fileArgs, f.flag+"="+path)
	}
	return parseAndLoad(append(fileArgs, args...))
}

// noFiles are the flags that name no configuration file, so that a test
// never reads the machine's /etc, and keep the timers in memory, so that
// it writes no storage folder where it runs.
var noFiles = []string{"--local-config-file=", "--cluster-config-file=", "--shared-config-file=", "--dns-config-file=", "--storage-dir="}

// parseAndLoad parses args as cmd/chronos does and loads the
// configuration.
func parseAndLoad(args []string) (Node, error) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	var f Flags
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		return Node{}, err
	}
	return f.Load()
}

// TestDefaults proves that with no configuration at all the node serves
// alone on 127.0.0.1:7253.
func TestDefaults(t *testing.T) {
	cfg, err := load(t, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.ListenAddress(), "127.0.0.1:7253"; got != want {
		t.Errorf("ListenAddress() = %q, want %q", got, want)
	}
	if got, want := cfg.Localhost, "127.0.0.1:7253"; got != want {
		t.Errorf("Localhost = %q, want %q", got, want)
	}
	if got := cfg.Cluster; len(got.Nodes)+len(got.Joining)+len(got.Leaving) != 0 {
		t.Errorf("Cluster = %+v, want empty (a cluster of just this node)", got)
	}
	if got, want := cfg.LogLevel, slog.LevelInfo; got != want {
		t.Errorf("LogLevel = %v, want %v", got, want)
	}
	if got, want := cfg.LocalSite, node.DefaultConfig().LocalSite; got != want {
		t.Errorf("LocalSite = %q, want %q", got, want)
	}
}

// originalLocal is a chronos.conf as the original service ships it, with
// sections this port ignores.
const originalLocal = `
[http]
bind-address = 10.0.0.1
bind-port = 7254
threads = 50

[logging]
folder = /var/log/chronos
level = 5

[alarms]
enabled = true

[identity]
instance_id = 3
deployment_id = 0
`

const originalCluster = `
[cluster]
localhost = 10.0.0.1:7254
node = 10.0.0.1:7254
node = 10.0.0.2
node = 10.0.0.3:7000
joining = 10.0.0.4
leaving = 10.0.0.5
`

// loadCase is one row of a table of loads that succeed.
type loadCase struct {
	name           string
	local, cluster string
	args           []string
	want           func(*Node)
}

// TestLoad proves how files and flags combine: the original file format is
// read, addresses without a port get the bind-port (7254 here, 8000 from
// a flag), as in the original, and flags override files.
func TestLoad(t *testing.T) {
	tests := []loadCase{
		{"original files", originalLocal, originalCluster, nil, func(c *Node) {
			c.BindAddress, c.BindPort, c.LogLevel, c.InstanceID = "10.0.0.1", 7254, slog.LevelDebug-4, 3
			c.Localhost = "10.0.0.1:7254"
			c.Cluster = node.Membership{
				Nodes:   []string{"10.0.0.1:7254", "10.0.0.2:7254", "10.0.0.3:7000"},
				Joining: []string{"10.0.0.4:7254"}, Leaving: []string{"10.0.0.5:7254"},
			}
		}},
		{"localhost defaults to the bind address", "[http]\nbind-address = 10.0.0.1\n", "[cluster]\nnode = 10.0.0.1\nnode = 10.0.0.2\n", nil, func(c *Node) {
			c.BindAddress = "10.0.0.1"
			c.Localhost = "10.0.0.1:7253"
			c.Cluster.Nodes = []string{"10.0.0.1:7253", "10.0.0.2:7253"}
		}},
		{"comma lists and IPv6", "", "[cluster]\nlocalhost = ::1\nnode = [::1], [::2]:7000\n", nil, func(c *Node) {
			c.Localhost = "[::1]:7253"
			c.Cluster.Nodes = []string{"[::1]:7253", "[::2]:7000"}
		}},
		{"level by name", "[logging]\nlevel = WARNING\n", "", nil, func(c *Node) { c.LogLevel = slog.LevelWarn }},
		{"level 0 is error", "[logging]\nlevel = 0\n", "", nil, func(c *Node) { c.LogLevel = slog.LevelError }},
		{"level warn, format json", "[logging]\nlevel = warn\nformat = JSON\n", "", nil, func(c *Node) {
			c.LogLevel, c.LogFormat = slog.LevelWarn, LogJSON
		}},
		{"format flag overrides the file", "[logging]\nformat = json\n", "", []string{"--log-format", "text"}, func(c *Node) { c.LogFormat = LogText }},
		{"sites", "", "[sites]\nlocal_site = east\nremote_site = west=10.1.0.1\nremote_site = north=10.2.0.1:7000\n", nil, func(c *Node) {
			c.LocalSite = "east"
			c.RemoteSites = []node.Site{{Name: "west", Address: "10.1.0.1:7253"}, {Name: "north", Address: "10.2.0.1:7000"}}
		}},
		{"flags override files", originalLocal, originalCluster, []string{
			"--bind-port", "8000", "--log-level", "debug", "--instance-id", "9",
			"--localhost", "10.0.0.1:8000", "--node", "10.0.0.1:8000", "--node", "10.0.0.7",
		}, func(c *Node) {
			c.BindAddress, c.BindPort, c.LogLevel, c.InstanceID = "10.0.0.1", 8000, slog.LevelDebug-4, 9
			c.Localhost = "10.0.0.1:8000"
			c.Cluster = node.Membership{
				Nodes:   []string{"10.0.0.1:8000", "10.0.0.7:8000"},
				Joining: []string{"10.0.0.4:8000"}, Leaving: []string{"10.0.0.5:8000"},
			}
		}},
		{"flags alone", "", "", []string{"--bind-address", "0.0.0.0", "--localhost", "10.0.0.1", "--node", "10.0.0.1,10.0.0.2", "--remote-site", "b=10.9.0.1"}, func(c *Node) {
			c.BindAddress = "0.0.0.0"
			c.Localhost = "10.0.0.1:7253"
			c.Cluster.Nodes = []string{"10.0.0.1:7253", "10.0.0.2:7253"}
			c.RemoteSites = []node.Site{{Name: "b", Address: "10.9.0.1:7253"}}
		}},
		{"alone on every interface", "[http]\nbind-address = 0.0.0.0\n", "", nil, func(c *Node) {
			c.BindAddress = "0.0.0.0"
			c.Localhost = "127.0.0.1:7253"
		}},
	}
	runLoadCases(t, tests)
}

// TestLoadKeyAndAllowList proves that the cluster key and the callback-host
// allow-list are read from their files, and that their flags override the
// files: the key flag replaces the key, the first allow-list flag replaces
// the file's list.
func TestLoadKeyAndAllowList(t *testing.T) {
	runLoadCases(t, []loadCase{
		{"callback_hosts", "[callbacks]\nallowed_host = cb.example\nallowed_host = 127.0.0.0/8, [::1]:8080 ,::1, cb.example:80\n", "", nil, func(c *Node) {
			c.CallbackHosts = []string{"cb.example", "127.0.0.0/8", "[::1]:8080", "::1", "cb.example:80"}
		}},
		{"callback hosts flag replaces the file's list", "[callbacks]\nallowed_host = cb.example\n", "", []string{"--allowed-callback-host", "10.0.0.0/8", "--allowed-callback-host", "a.example,b.example"}, func(c *Node) {
			c.CallbackHosts = []string{"10.0.0.0/8", "a.example", "b.example"}
		}},
		{"cluster key", "", "[cluster]\nkey = 0123456789abcdef  # shared by every node\n", nil, func(c *Node) {
			c.ClusterKey = "0123456789abcdef"
		}},
		{"cluster key flag overrides the file", "", "[cluster]\nkey = 0123456789abcdef\n", []string{"--cluster-key", " fedcba9876543210fedcba "}, func(c *Node) {
			c.ClusterKey = "fedcba9876543210fedcba"
		}},
	})
}

// TestLoadMemoryLimit proves that the memory limit is read from the local
// file in GOMEMLIMIT's units, bare bytes included, and that its flag
// overrides the file.
func TestLoadMemoryLimit(t *testing.T) {
	runLoadCases(t, []loadCase{
		{"GiB", "[limits]\nmemory_limit = 2GiB\n", "", nil, func(c *Node) { c.MemoryLimit = 2 << 30 }},
		{"MiB with a space", "[limits]\nmemory_limit = 1536 MiB\n", "", nil, func(c *Node) { c.MemoryLimit = 1536 << 20 }},
		{"bytes", "[limits]\nmemory_limit = 100000000\n", "", nil, func(c *Node) { c.MemoryLimit = 100_000_000 }},
		{"flag overrides the file", "[limits]\nmemory_limit = 2GiB\n", "", []string{"--memory-limit", "3GiB"}, func(c *Node) { c.MemoryLimit = 3 << 30 }},
		{"gc headroom percent", "[limits]\ngc_headroom = 10%\n", "", nil, func(c *Node) { c.GCHeadroom = 10 }},
		{"gc headroom bare number", "[limits]\ngc_headroom = 50\n", "", nil, func(c *Node) { c.GCHeadroom = 50 }},
		{"gc headroom off", "[limits]\ngc_headroom = off\n", "", nil, func(c *Node) { c.GCHeadroom = 0 }},
		{"gc headroom flag", "", "", []string{"--gc-headroom", "100%"}, func(c *Node) { c.GCHeadroom = 100 }},
	})
}

// runLoadCases loads each case and compares the result with the defaults
// changed by the case's want.
func runLoadCases(t *testing.T, tests []loadCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := load(t, tt.local, tt.cluster, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			want.Localhost = "127.0.0.1:7253"
			tt.want(&want)
			assertConfig(t, got, want)
		})
	}
}

// assertConfig compares the settings that files and flags control.
func assertConfig(t *testing.T, got, want Node) {
	t.Helper()
	type view struct {
		BindAddress string
		BindPort    int
		LogLevel    slog.Level
		LogFormat   string
		InstanceID  int
		Callbacks   []string
		Localhost   string
		Cluster     node.Membership
		LocalSite   string
		RemoteSites []node.Site
		ClusterKey  string
	}
	g := view{got.BindAddress, got.BindPort, got.LogLevel, got.LogFormat, got.InstanceID, got.CallbackHosts, got.Localhost, got.Cluster, got.LocalSite, got.RemoteSites, got.ClusterKey}
	w := view{want.BindAddress, want.BindPort, want.LogLevel, want.LogFormat, want.InstanceID, want.CallbackHosts, want.Localhost, want.Cluster, want.LocalSite, want.RemoteSites, want.ClusterKey}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("config\n got %+v\nwant %+v", g, w)
	}
}

// TestLoadErrors proves that every invalid setting is refused with an error
// naming the field and the bad value.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name           string
		local, cluster string
		args           []string
		want           string
	}{
		{"port not a number", "[http]\nbind-port = abc\n", "", nil, `[http] bind-port "abc"`},
		{"port out of range", "[http]\nbind-port = 70000\n", "", nil, `[http] bind-port "70000"`},
		{"bind address with port", "[http]\nbind-address = 10.0.0.1:80\n", "", nil, `bind-address "10.0.0.1:80" carries a port`},
		{"level too high", "[logging]\nlevel = 6\n", "", nil, `[logging] level "6"`},
		{"level unknown", "[logging]\nlevel = loud\n", "", nil, `[logging] level "loud"`},
		{"format unknown", "[logging]\nformat = yaml\n", "", nil, `[logging] format "yaml" is not a log format (text or json)`},
		{"format empty", "[logging]\nformat =\n", "", nil, `[logging] format "" is not a log format`},
		{"format flag unknown", "", "", []string{"--log-format", "xml"}, `--log-format "xml"`},
		{"instance id too big", "[identity]\ninstance_id = 1024\n", "", nil, `[identity] instance_id "1024"`},
		{"instance id negative", "[identity]\ninstance_id = -1\n", "", nil, `[identity] instance_id "-1"`},
		{"node port invalid", "", "[cluster]\nnode = 10.0.0.1:99999\n", nil, `[cluster] node "10.0.0.1:99999"`},
		{"node not an address", "", "[cluster]\nnode = a b\n", nil, `[cluster] node "a b"`},
		{"localhost not listed", "", "[cluster]\nlocalhost = 10.0.0.9\nnode = 10.0.0.1\n", nil, `localhost "10.0.0.9:7253" is not listed`},
		{"node listed twice", "", "[cluster]\nlocalhost = 10.0.0.1\nnode = 10.0.0.1\nnode = 10.0.0.1:7253\n", nil, `node "10.0.0.1:7253" is already listed as node`},
		{"joining and node", "", "[cluster]\nlocalhost = 10.0.0.1\nnode = 10.0.0.1\njoining = 10.0.0.1\n", nil, `joining "10.0.0.1:7253" is already listed as node`},
		{"remote site malformed", "", "[sites]\nremote_site = nosign\n", nil, `[sites] remote_site "nosign"`},
		{"remote site is local", "", "[sites]\nlocal_site = a\nremote_site = a=10.0.0.1\n", nil, `remote_site "a" names a site twice`},
		{"cluster on every interface without localhost", "[http]\nbind-address = 0.0.0.0\n", "[cluster]\nnode = 10.0.0.1\n", nil, `localhost is not set and bind-address "0.0.0.0"`},
		{"flag port", "", "", []string{"--bind-port", "x"}, `--bind-port "x"`},
		{"flag level", "", "", []string{"--log-level", "9"}, `--log-level "9"`},
		{"flag node", "", "", []string{"--node", "10.0.0.1:0"}, `--node "10.0.0.1:0"`},
		{"flag remote site", "", "", []string{"--remote-site", "=10.0.0.1"}, `--remote-site "=10.0.0.1"`},
		{"callback host with a path", "[callbacks]\nallowed_host = cb.example, cb.example/x\n", "", nil, `[callbacks] allowed_host "cb.example/x" is not a host, host:port or IP prefix`},
		{"callback host port 0", "[callbacks]\nallowed_host = cb.example:0\n", "", nil, `[callbacks] allowed_host "cb.example:0"`},
		{"callback prefix too long", "[callbacks]\nallowed_host = 10.0.0.0/33\n", "", nil, `[callbacks] allowed_host "10.0.0.0/33"`},
		{"callback host with colons", "[callbacks]\nallowed_host = a:b:c\n", "", nil, `[callbacks] allowed_host "a:b:c"`},
		{"flag callback host", "", "", []string{"--allowed-callback-host", "http://cb.example"}, `--allowed-callback-host "http://cb.example"`},
		{"empty value", "[http]\nbind-address =\n", "", nil, `bind-address "" is not a host`},
		{"memory limit in GB", "[limits]\nmemory_limit = 2GB\n", "", nil, `[limits] memory_limit "2GB" is not a size in bytes`},
		{"memory limit negative", "[limits]\nmemory_limit = -1\n", "", nil, `[limits] memory_limit "-1" is not a size`},
		{"memory limit overflows", "[limits]\nmemory_limit = 9000000TiB\n", "", nil, `[limits] memory_limit "9000000TiB" is not a size`},
		{"memory limit too small", "[limits]\nmemory_limit = 1MiB\n", "", nil, `[limits] memory_limit "1MiB" is below the least, 64 MiB`},
		{"memory limit empty", "[limits]\nmemory_limit =\n", "", nil, `[limits] memory_limit "" is not a size`},
		{"gc headroom zero", "[limits]\ngc_headroom = 0%\n", "", nil, `[limits] gc_headroom "0%" is not a percent from 1 to 100`},
		{"gc headroom over 100", "[limits]\ngc_headroom = 101%\n", "", nil, `[limits] gc_headroom "101%" is not a percent from 1 to 100`},
		{"gc headroom a word", "[limits]\ngc_headroom = some\n", "", nil, `[limits] gc_headroom "some" is not a percent`},
		{"flag memory limit", "", "", []string{"--memory-limit", "lots"}, `--memory-limit "lots"`},
		{"not INI", "[http\nbind-port = 1\n", "", nil, "not an INI file"},
		{"unreadable file", "", "", []string{"--local-config-file", "/"}, "read local config file"},
		{"log folder empty", "[logging]\nfolder =\n", "", nil, `[logging] folder "" is not a folder`},
		{"replicate not a boolean", "", "[sites]\nreplicate_timers_across_sites = sometimes\n", nil, `[sites] replicate_timers_across_sites "sometimes" is not a boolean`},
		{"flag replicate", "", "", []string{"--replicate-timers-across-sites", "maybe"}, `--replicate-timers-across-sites "maybe"`},
		{"flag log folder", "", "", []string{"--log-folder", " "}, `--log-folder " " is not a folder`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, tt.local, tt.cluster, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestClusterKeyErrors proves that a cluster key that is too short, empty
// or cut short by a comment character is refused, from the file and from
// the flag, with an error that names the setting and never holds the key.
func TestClusterKeyErrors(t *testing.T) {
	tests := []struct {
		name, cluster string
		args          []string
		want, secret  string
	}{
		{"file too short", "[cluster]\nkey = sesame-15-bytes\n", nil, "[cluster] key is 15 bytes, fewer than 16", "sesame"},
		{"file empty", "[cluster]\nkey =\n", nil, "[cluster] key is empty", ""},
		{"file cut by #", "[cluster]\nkey = sesame0123456789#abcdef\n", nil, "[cluster] key holds '#' or ';'", "sesame"},
		{"file cut by ;", "[cluster]\nkey = sesame0123456789;abcdef\n", nil, "[cluster] key holds '#' or ';'", "sesame"},
		{"flag too short", "", []string{"--cluster-key", "sesame"}, "--cluster-key is 6 bytes, fewer than 16", "sesame"},
		{"flag empty", "", []string{"--cluster-key", " "}, "--cluster-key is empty", ""},
		{"flag too short over a good file", "[cluster]\nkey = 0123456789abcdef\n", []string{"--cluster-key", "sesame"}, "--cluster-key is 6 bytes", "sesame"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, "", tt.cluster, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
			if tt.secret != "" && strings.Contains(err.Error(), tt.secret) {
				t.Errorf("error %q holds the key", err)
			}
		})
	}
	cfg := Default()
	cfg.Localhost = "127.0.0.1:7253"
	cfg.ClusterKey = "sesame"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "ClusterKey is 6 bytes") || strings.Contains(err.Error(), "sesame") {
		t.Errorf("Validate() = %v, want a cluster key length error without the key", err)
	}
}

// TestParseFromBytes proves that the exported parser applies only what the
// file gives and prefixes its errors.
func TestParseFromBytes(t *testing.T) {
	cfg := Default()
	if err := Parse([]byte("[http]\nbind-port = 7300\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := Parse([]byte("[cluster]\nnode = 10.0.0.1\nnode = 10.0.0.2\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.BindAddress, DefaultBindAddress; got != want {
		t.Errorf("BindAddress = %q, want %q", got, want)
	}
	if got, want := cfg.BindPort, 7300; got != want {
		t.Errorf("BindPort = %d, want %d", got, want)
	}
	if got, want := cfg.Cluster.Nodes, []string{"10.0.0.1", "10.0.0.2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Cluster.Nodes = %q, want %q", got, want)
	}
	err := Parse([]byte("[http]\nbind-port = x\n"), &cfg)
	if err == nil || !strings.HasPrefix(err.Error(), "server: ") {
		t.Errorf("error = %v, want one starting with %q", err, "server: ")
	}
}

// TestReloadCluster proves that a reload re-reads the cluster file, that
// flags still override it, and that neither the node's own address nor the
// cluster key can change.
func TestReloadCluster(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "chronos_cluster.conf", "[cluster]\nlocalhost = 10.0.0.1\nnode = 10.0.0.1\n")
	cfg, err := parseAndLoad(append(noFiles, "--cluster-config-file", path, "--leaving", "10.0.0.9"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "chronos_cluster.conf", "[cluster]\nlocalhost = 10.0.0.1\nnode = 10.0.0.1\nnode = 10.0.0.2\nleaving = 10.0.0.3\n")
	next, err := cfg.ReloadCluster()
	if err != nil {
		t.Fatal(err)
	}
	want := node.Membership{Nodes: []string{"10.0.0.1:7253", "10.0.0.2:7253"}, Leaving: []string{"10.0.0.9:7253"}}
	if got := next.Cluster; !reflect.DeepEqual(got, want) {
		t.Errorf("Cluster = %+v, want %+v", got, want)
	}
	writeFile(t, dir, "chronos_cluster.conf", "[cluster]\nlocalhost = 10.0.0.2\nnode = 10.0.0.2\n")
	if _, err := cfg.ReloadCluster(); err == nil || !strings.Contains(err.Error(), `localhost "10.0.0.2:7253" differs`) {
		t.Errorf("error = %v, want one saying localhost differs", err)
	}
	writeFile(t, dir, "chronos_cluster.conf", "[cluster]\nlocalhost = 10.0.0.1\nnode = 10.0.0.1\nnode = bad:port\n")
	if _, err := cfg.ReloadCluster(); err == nil || !strings.Contains(err.Error(), `[cluster] node "bad:port"`) {
		t.Errorf("error = %v, want one naming [cluster] node \"bad:port\"", err)
	}
}

// TestReloadClusterKey proves that a reload takes the cluster keys the
// files give then, so that a rotation needs no restart: an unchanged key,
// a new one with the old one accepted, the new one alone, and none.
func TestReloadClusterKey(t *testing.T) {
	dir := t.TempDir()
	const base = "[cluster]\nlocalhost = 10.0.0.1\nnode = 10.0.0.1\n"
	path := writeFile(t, dir, "chronos_cluster.conf", base+"key = old-key-0123456789\n")
	cfg, err := load(t, "", "", "--cluster-config-file", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ content, key, accepted string }{
		{base + "node = 10.0.0.2\nkey = old-key-0123456789\n", "old-key-0123456789", ""},
		{base + "key = old-key-0123456789\naccepted_key = new-key-0123456789\n", "old-key-0123456789", "new-key-0123456789"},
		{base + "key = new-key-0123456789\naccepted_key = old-key-0123456789\n", "new-key-0123456789", "old-key-0123456789"},
		{base + "key = new-key-0123456789\n", "new-key-0123456789", ""},
		{base, "", ""},
	} {
		writeFile(t, dir, "chronos_cluster.conf", tc.content)
		next, err := cfg.ReloadCluster()
		if err != nil {
			t.Fatalf("reload of %q: %v", tc.content, err)
		}
		if next.ClusterKey != tc.key || next.AcceptedKey != tc.accepted {
			t.Errorf("reload of %q: keys %q and %q, want %q and %q", tc.content, next.ClusterKey, next.AcceptedKey, tc.key, tc.accepted)
		}
	}
	writeFile(t, dir, "chronos_cluster.conf", base+"accepted_key = new-key-0123456789\n")
	if _, err := cfg.ReloadCluster(); err == nil || strings.Contains(err.Error(), "-key-") {
		t.Errorf("reload with an accepted key and no key: error %v, want one that shows no key", err)
	}
}

// TestConfiguredInstanceClashIsAConfigError proves a configured
// instance_id that another member derives is refused when the
// configuration is loaded (exit code 2), naming that member.
func TestConfiguredInstanceClashIsAConfigError(t *testing.T) {
	m := node.Membership{Nodes: []string{"10.0.0.1:7253", "10.0.0.2:7253"}}
	ids, err := node.InstanceIDs(m)
	if err != nil {
		t.Fatal(err)
	}
	local := fmt.Sprintf("[identity]\ninstance_id = %d\n", ids["10.0.0.2:7253"])
	_, err = load(t, local, "[cluster]\nlocalhost = 10.0.0.1\nnode = 10.0.0.1\nnode = 10.0.0.2\n")
	if err == nil || !strings.Contains(err.Error(), "10.0.0.2:7253") {
		t.Fatalf("error = %v, want one naming 10.0.0.2:7253", err)
	}
}

// TestClusterKeyFile proves --cluster-key-file supplies the key (a
// trailing newline and all), overrides the cluster file's key, and that a
// short key, a missing file or the flag given beside --cluster-key is an
// error that never shows the key.
func TestClusterKeyFile(t *testing.T) {
	dir := t.TempDir()
	const key = "0123456789abcdef-from-a-file"
	good := writeFile(t, dir, "key", key+"\n")
	cfg, err := load(t, "", "[cluster]\nkey = 0123456789abcdef-from-the-cluster-file\n", "--cluster-key-file", good)
	if err != nil || cfg.ClusterKey != key {
		t.Fatalf("key from the file: got %q, %v, want %q", cfg.ClusterKey, err, key)
	}
	short := writeFile(t, dir, "short", "tiny-secret\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"short key", []string{"--cluster-key-file", short}, "fewer than 16"},
		{"missing file", []string{"--cluster-key-file", dir + "/none"}, "read cluster key file"},
		{"both flags", []string{"--cluster-key", key, "--cluster-key-file", good}, "both given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, "", "", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "tiny-secret") || strings.Contains(err.Error(), key) {
				t.Errorf("error = %v, want one containing %q and no key", err, tc.want)
			}
		})
	}
}

// mergeCase is one row of TestMergeFiles: the files, the flags, and how
// the result differs from the defaults.
type mergeCase struct {
	name  string
	files files
	args  []string
	want  func(*Node)
}

// TestMergeFiles proves the original's merge of its three INI files: any
// section may sit in any file; a setting the cluster file gives wins over
// the local file's, which wins over the shared file's; a list comes whole
// from the first file that gives it; flags win over every file.
func TestMergeFiles(t *testing.T) {
	const sharedSites = "[sites]\nlocal_site = mysite\nremote_site = a=foo.example:800\nremote_site = b=bar.example\nreplicate_timers_across_sites = true\n"
	tests := []mergeCase{
		{"shared file alone", files{shared: sharedSites}, nil, func(c *Node) {
			c.LocalSite, c.ReplicateAcrossSites = "mysite", true
			c.RemoteSites = []node.Site{{Name: "a", Address: "foo.example:800"}, {Name: "b", Address: "bar.example:7253"}}
		}},
		{"local over shared", files{local: "[http]\nbind-port = 7254\n", shared: "[http]\nbind-port = 7300\n[logging]\nlevel = 4\n"}, nil, func(c *Node) {
			c.BindPort, c.LogLevel, c.Localhost = 7254, slog.LevelDebug, "127.0.0.1:7254"
		}},
		{"cluster over local and shared", files{
			local:   "[http]\nbind-port = 7254\n[logging]\nfolder = /var/log/local\n",
			cluster: "[http]\nbind-port = 7255\n",
			shared:  "[http]\nbind-port = 7300\n[logging]\nfolder = /var/log/shared\nlevel = 1\n",
		}, nil, func(c *Node) {
			c.BindPort, c.Localhost = 7255, "127.0.0.1:7255"
			c.LogFolder, c.LogLevel = "/var/log/local", slog.LevelWarn
		}},
		{"a list comes whole from one file", files{
			local:   "[cluster]\nnode = 127.0.0.1\nnode = 10.0.0.2\n[callbacks]\nallowed_host = a.example\n",
			cluster: "[cluster]\nnode = 127.0.0.1\nnode = 10.0.0.3\n",
			shared:  "[callbacks]\nallowed_host = b.example\nallowed_host = c.example\n",
		}, nil, func(c *Node) {
			c.Cluster.Nodes = []string{"127.0.0.1:7253", "10.0.0.3:7253"}
			c.CallbackHosts = []string{"a.example"}
		}},
		{"cluster section in the shared file, http in the cluster file", files{
			cluster: "[http]\nbind-address = 10.0.0.1\n",
			shared:  "[cluster]\nnode = 10.0.0.1\nnode = 10.0.0.2\nkey = 0123456789abcdef\n[identity]\ninstance_id = 7\n",
		}, nil, func(c *Node) {
			c.BindAddress, c.Localhost, c.InstanceID = "10.0.0.1", "10.0.0.1:7253", 7
			c.Cluster.Nodes = []string{"10.0.0.1:7253", "10.0.0.2:7253"}
			c.ClusterKey = "0123456789abcdef"
		}},
		{"flags over every file", files{local: "[logging]\nfolder = /a\n", cluster: sharedSites, shared: "[logging]\nfolder = /b\n"},
			[]string{"--log-folder", "/c", "--replicate-timers-across-sites", "no"}, func(c *Node) {
				c.LocalSite, c.LogFolder = "mysite", "/c"
				c.RemoteSites = []node.Site{{Name: "a", Address: "foo.example:800"}, {Name: "b", Address: "bar.example:7253"}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := loadFiles(t, tt.files, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			want.Localhost = "127.0.0.1:7253"
			tt.want(&want)
			assertConfig(t, got, want)
			if got.LogFolder != want.LogFolder || got.ReplicateAcrossSites != want.ReplicateAcrossSites {
				t.Errorf("LogFolder %q, ReplicateAcrossSites %v; want %q, %v", got.LogFolder, got.ReplicateAcrossSites, want.LogFolder, want.ReplicateAcrossSites)
			}
		})
	}
}

// TestNewKeys proves each key the original reads and this implementation
// now reads too, from the file and from its flag: [logging] folder and
// [sites] replicate_timers_across_sites in every spelling of a boolean
// the original takes, off by default.
func TestNewKeys(t *testing.T) {
	tests := []struct {
		name, local string
		args        []string
		folder      string
		replicate   bool
	}{
		{"defaults", "", nil, "", false},
		{"folder", "[logging]\nfolder = /var/log/chronos\n", nil, "/var/log/chronos", false},
		{"folder flag", "[logging]\nfolder = /var/log/chronos\n", []string{"--log-folder", "/tmp/x"}, "/tmp/x", false},
		{"replicate true", "[sites]\nreplicate_timers_across_sites = true\n", nil, "", true},
		{"replicate Yes", "[sites]\nreplicate_timers_across_sites = Yes\n", nil, "", true},
		{"replicate 1", "[sites]\nreplicate_timers_across_sites = 1\n", nil, "", true},
		{"replicate on", "[sites]\nreplicate_timers_across_sites = on\n", nil, "", true},
		{"replicate false", "[sites]\nreplicate_timers_across_sites = false\n", nil, "", false},
		{"replicate off", "[sites]\nreplicate_timers_across_sites = OFF\n", nil, "", false},
		{"replicate flag", "[sites]\nreplicate_timers_across_sites = false\n", []string{"--replicate-timers-across-sites", "true"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := load(t, tt.local, "", tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.LogFolder != tt.folder || cfg.ReplicateAcrossSites != tt.replicate {
				t.Errorf("LogFolder %q, ReplicateAcrossSites %v; want %q, %v", cfg.LogFolder, cfg.ReplicateAcrossSites, tt.folder, tt.replicate)
			}
			if len(cfg.Warnings) != 0 {
				t.Errorf("warnings %+v, want none", cfg.Warnings)
			}
		})
	}
}

// TestMissingFiles proves that a configuration file that does not exist
// gives no settings, as in the original: named on the command line it is
// a warning, at its default path it is not.
func TestMissingFiles(t *testing.T) {
	dir := t.TempDir()
	absent := func(name string) string { return filepath.Join(dir, name) }
	cfg, err := parseAndLoad([]string{
		"--local-config-file", absent("chronos.conf"), "--cluster-config-file", absent("chronos_cluster.conf"),
		"--shared-config-file", absent("chronos_shared.conf"), "--dns-config-file", absent("dns.json"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Localhost = "127.0.0.1:7253"
	assertConfig(t, cfg, want)
	var got []string
	for _, w := range cfg.Warnings {
		if w.Kind != MissingFile {
			t.Errorf("warning %+v, want kind MissingFile", w)
		}
		got = append(got, filepath.Base(w.File))
	}
	if want := []string{"chronos.conf", "chronos_cluster.conf", "chronos_shared.conf", "dns.json"}; !reflect.DeepEqual(got, want) {
		t.Errorf("warned of %q, want %q", got, want)
	}

	for _, p := range []string{DefaultLocalConfigFile, DefaultClusterConfigFile, DefaultSharedConfigFile, DefaultDNSConfigFile} {
		if _, err := os.Stat(p); err == nil {
			t.Skipf("%s exists on this machine, so the default paths cannot be tested absent: "+
				"run this test where the original's files are not installed (CI machines have none)", p)
		}
	}
	cfg, err = parseAndLoad(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("default paths absent: warnings %+v, want none", cfg.Warnings)
	}
}

// TestReloadFiles proves that a reload takes the membership from whichever
// file gives it, refuses a change of the replication across sites, and
// refuses a file that was read at start and is gone, while a file absent
// from the start may stay absent.
func TestReloadFiles(t *testing.T) {
	dir := t.TempDir()
	local := writeFile(t, dir, "chronos.conf", "[http]\nbind-address = 10.0.0.1\n")
	shared := writeFile(t, dir, "chronos_shared.conf", "[cluster]\nnode = 10.0.0.1\n[sites]\nreplicate_timers_across_sites = true\n")
	cfg, err := parseAndLoad(append(noFiles, "--local-config-file", local, "--shared-config-file", shared,
		"--cluster-config-file", filepath.Join(dir, "absent.conf")))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "chronos_shared.conf", "[cluster]\nnode = 10.0.0.1\nnode = 10.0.0.2\n[sites]\nreplicate_timers_across_sites = true\n")
	next, err := cfg.ReloadCluster()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.0.0.1:7253", "10.0.0.2:7253"}; !reflect.DeepEqual(next.Cluster.Nodes, want) {
		t.Errorf("nodes %q, want %q", next.Cluster.Nodes, want)
	}
	writeFile(t, dir, "chronos_shared.conf", "[cluster]\nnode = 10.0.0.1\n")
	if _, err := cfg.ReloadCluster(); err == nil || !strings.Contains(err.Error(), "sites changed") {
		t.Errorf("replication turned off: error %v, want the sites change refused", err)
	}
	if err := os.Remove(local); err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.ReloadCluster(); err == nil || !strings.Contains(err.Error(), "does not exist any more") {
		t.Errorf("local file removed: error %v, want it refused", err)
	}
}

// TestStorageSetting proves where the node keeps its timers: the binary's
// default folder, [storage] dir from any file, the flag over the file,
// and an empty value for memory only.
func TestStorageSetting(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "chronos_shared.conf", "[storage]\ndir = /var/lib/chronos\n")
	files := []string{"--local-config-file=", "--cluster-config-file=", "--dns-config-file=", "--shared-config-file"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{append(files, ""), DefaultStorageDir},
		{append(files, file), "/var/lib/chronos"},
		{append(files, file, "--storage-dir", "/srv/timers"), "/srv/timers"},
		{append(files, file, "--storage-dir="), ""},
	} {
		cfg, err := parseAndLoad(tt.args)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if cfg.StorageDir != tt.want {
			t.Errorf("%v: StorageDir %q, want %q", tt.args, cfg.StorageDir, tt.want)
		}
	}
	if _, err := parseAndLoad(append(noFiles, "--storage-dir", "a\x01b")); err == nil || !strings.Contains(err.Error(), "--storage-dir") {
		t.Errorf("a folder with a control character: %v, want an error naming --storage-dir", err)
	}
}

// TestPprofAddressOnLoopbackOnly: profiles are served to this machine
// only, so a pprof address must be a loopback IP literal with a port;
// the others are refused when the configuration loads, without
// listening.
func TestPprofAddressOnLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"": true, "127.0.0.1:6060": true, "127.0.0.2:0": true, "[::1]:6060": true,
		"0.0.0.0:6060": false, "10.0.0.1:6060": false, "[::]:6060": false,
		"localhost:6060": false, "127.0.0.1": false, "127.0.0.1:70000": false,
	} {
		c, err := load(t, "[debug]\npprof_address = "+addr+"\n", "")
		if (err == nil) != ok || ok && c.PprofAddress != addr {
			t.Errorf("pprof_address %q: %v (set %q), want accepted %v", addr, err, c.PprofAddress, ok)
		}
	}
}
