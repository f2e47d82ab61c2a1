package config

import (
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestWarnings proves that lines the files hold but this implementation
// does not read are accepted and reported, in file order, each naming its
// file, section and key, and distinguishing unknown sections and keys and
// settings of the original Chronos not used here; and that a section read
// from one file is read from any.
func TestWarnings(t *testing.T) {
	type w struct {
		file, section, key string
		kind               WarningKind
	}
	const local, cluster = "chronos.conf", "chronos_cluster.conf"
	tests := []struct {
		name           string
		local, cluster string
		want           []w
	}{
		{"none", "[http]\nbind-port = 7253\n", "[cluster]\nnode = 127.0.0.1\n", nil},
		{"original files", originalLocal, originalCluster, []w{
			{local, "http", "threads", OriginalOnly},
			{local, "alarms", "enabled", OriginalOnly},
			{local, "identity", "deployment_id", OriginalOnly},
		}},
		{"original shared settings", "", "[sites]\nreplicate_timers_across_sites = true\n[dns]\nservers = 127.0.0.1\n[exceptions]\nmax_ttl = 600\n", []w{
			{cluster, "dns", "servers", OriginalOnly},
			{cluster, "exceptions", "max_ttl", OriginalOnly},
		}},
		{"unknown key", "[http]\nbind_port = 7300\n", "[cluster]\nnodes = 127.0.0.1\n", []w{
			{local, "http", "bind_port", UnknownKey},
			{cluster, "cluster", "nodes", UnknownKey},
		}},
		{"unknown key in an original section", "[dns]\nserver = 127.0.0.1\n", "", []w{
			{local, "dns", "server", UnknownKey},
		}},
		{"unknown section", "[HTTP]\nbind-port = 7300\n[empty]\n", "[clustr]\nnode = 127.0.0.1\nnode = 127.0.0.2\n", []w{
			{local, "HTTP", "bind-port", UnknownSection},
			{local, "empty", "", UnknownSection},
			{cluster, "clustr", "node", UnknownSection},
		}},
		{"key outside any section", "level = 3\n[logging]\nlevel = 2\n", "", []w{
			{local, "", "level", UnknownKey},
		}},
		{"any section in any file", "[cluster]\nnode = 127.0.0.1\nkey = 0123456789abcdef\n[sites]\nlocal_site = a\n", "[http]\nbind-port = 7253\n[callbacks]\nallowed_host = ::1\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := load(t, tt.local, tt.cluster)
			if err != nil {
				t.Fatal(err)
			}
			var got []w
			for _, x := range cfg.Warnings {
				got = append(got, w{filepath.Base(x.File), x.Section, x.Key, x.Kind})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("warnings\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestWarningMessages proves that each kind of warning says why the part
// is not read.
func TestWarningMessages(t *testing.T) {
	absent := filepath.Join(t.TempDir(), "absent.conf")
	cfg, err := loadFiles(t, files{local: "[http]\nthreads = 5\nbind_port = 1\n[nosuch]\nx = 1\n", dns: `{"hostnames": [], "x": 1}`},
		"--shared-config-file", absent)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ignored: setting of the original Chronos not used here",
		"unknown configuration key; not read",
		"unknown configuration section; not read",
		"configuration file not found; its settings take their defaults",
		"unknown DNS config field; not read",
	}
	var got []string
	for _, w := range cfg.Warnings {
		got = append(got, w.Message)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("messages\n got %q\nwant %q", got, want)
	}
}

// TestEveryReadKeyIsKnown proves that the keys the parser reads raise no
// warning: a file of every key of the table, each with its example value,
// loads with no warning, whichever file holds it. ([storage] dir once
// warned as an unknown section while it was read.)
func TestEveryReadKeyIsKnown(t *testing.T) {
	var all strings.Builder
	for _, s := range table {
		all.WriteString("[" + s.section + "]\n" + s.key + " = " + s.example + "\n")
	}
	for _, fl := range []files{{local: all.String()}, {cluster: all.String()}, {shared: all.String()}} {
		cfg, err := loadFiles(t, fl)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Warnings) != 0 {
			t.Errorf("warnings %+v, want none", cfg.Warnings)
		}
	}
}

// TestWarningsOnReload proves that a reload re-reads every file and
// reports the parts of each that are not read again, as they are then.
func TestWarningsOnReload(t *testing.T) {
	dir := t.TempDir()
	local := writeFile(t, dir, "chronos.conf", "[http]\nthreads = 5\n")
	path := writeFile(t, dir, "chronos_cluster.conf", "[cluster]\nnode = 127.0.0.1\n")
	cfg, err := parseAndLoad(append(noFiles, "--local-config-file", local, "--cluster-config-file", path))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || cfg.Warnings[0].Key != "threads" {
		t.Fatalf("warnings at load %+v, want the one of [http] threads", cfg.Warnings)
	}
	writeFile(t, dir, "chronos_cluster.conf", "[cluster]\nnode = 127.0.0.1\nnodes = 127.0.0.2\n")
	next, err := cfg.ReloadCluster()
	if err != nil {
		t.Fatal(err)
	}
	want := []Warning{
		{File: local, Section: "http", Key: "threads", Kind: OriginalOnly, Message: "ignored: setting of the original Chronos not used here"},
		{File: path, Section: "cluster", Key: "nodes", Kind: UnknownKey, Message: "unknown configuration key; not read"},
	}
	if !reflect.DeepEqual(next.Warnings, want) {
		t.Errorf("warnings at reload %+v, want %+v", next.Warnings, want)
	}
}

// TestParseWarnings proves that the exported parser appends its
// warnings to the configuration, with no file name.
func TestParseWarnings(t *testing.T) {
	cfg := Default()
	if err := Parse([]byte("[dns]\nport = 53\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := Parse([]byte("[nosuch]\nx = 1\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	var got []WarningKind
	for _, w := range cfg.Warnings {
		if w.File != "" {
			t.Errorf("warning %+v names a file", w)
		}
		got = append(got, w.Kind)
	}
	if want := []WarningKind{OriginalOnly, UnknownSection}; !reflect.DeepEqual(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
}

// TestLogWarnings proves that each warning becomes one Warn record with
// its message and the keys file, section and key.
func TestLogWarnings(t *testing.T) {
	var buf strings.Builder
	LogWarnings(slog.New(slog.NewTextHandler(&buf, nil)), []Warning{
		{File: "conf/chronos.conf", Section: "http", Key: "bind_port", Kind: UnknownKey, Message: "unknown configuration key; not read"},
		{File: "c.conf", Section: "empty", Kind: UnknownSection, Message: "unknown configuration section; not read"},
	})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=WARN msg="unknown configuration key; not read" file=conf/chronos.conf section=http key=bind_port`,
		`level=WARN msg="unknown configuration section; not read" file=c.conf section=empty key=""`,
	}
	if len(lines) != len(want) {
		t.Fatalf("log has %d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, l := range lines {
		if !strings.HasSuffix(l, want[i]) {
			t.Errorf("line %d = %s\nwant it to end %s", i, l, want[i])
		}
	}
}
