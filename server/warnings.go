package server

import (
	"log/slog"
	"slices"

	"gopkg.in/ini.v1"
)

// Warning is a line of a configuration file that was accepted, as the
// original Chronos accepts it, but is not read: a mistake to show, not to
// refuse.
type Warning struct {
	// File is the file's path; empty for data given to ParseLocalConfig
	// or ParseClusterConfig.
	File string
	// Section is "" for a key before the first section header.
	Section string
	// Key is "" for a section that holds no keys.
	Key string
	// Kind says why the line is not read, Message says it in words.
	Kind    WarningKind
	Message string
}

// WarningKind is why a configuration line is not read.
type WarningKind int

// The kinds of Warning.
const (
	// UnknownSection is a section no Chronos reads.
	UnknownSection WarningKind = iota + 1
	// UnknownKey is a key no Chronos reads, in a known section or before
	// any section.
	UnknownKey
	// OriginalOnly is a setting of the original Chronos that this
	// implementation does not use.
	OriginalOnly
	// OtherFile is a setting this implementation reads, but from the other
	// configuration file.
	OtherFile
)

// LogWarnings logs each warning at Warn level with its file, section and
// key.
func LogWarnings(log *slog.Logger, ws []Warning) {
	for _, w := range ws {
		log.Warn(w.Message, "file", w.File, "section", w.Section, "key", w.Key)
	}
}

// fileRole names a configuration file by what it holds.
type fileRole int

const (
	localFile   fileRole = iota + 1 // chronos.conf
	clusterFile                     // chronos_cluster.conf
)

func (r fileRole) String() string {
	if r == localFile {
		return "chronos.conf (--local-config-file)"
	}
	return "chronos_cluster.conf (--cluster-config-file)"
}

// readKeys is every key this implementation reads, by section, with the
// file it reads it from. Merging the files' sections would make the role
// irrelevant, not the table.
var readKeys = map[string]map[string]fileRole{
	"http":      {"bind-address": localFile, "bind-port": localFile},
	"logging":   {"level": localFile},
	"identity":  {"instance_id": localFile},
	"callbacks": {"allowed_host": localFile},
	"limits":    {"memory_limit": localFile},
	"cluster": {
		"localhost": clusterFile, "node": clusterFile, "joining": clusterFile,
		"leaving": clusterFile, "key": clusterFile,
	},
	"sites": {"local_site": clusterFile, "remote_site": clusterFile},
}

// originalKeys are the keys the original Chronos reads (from any of its
// files, in any of its releases) that this implementation does not use.
var originalKeys = map[string][]string{
	"http":       {"threads", "gr_threads"},
	"logging":    {"folder"},
	"identity":   {"deployment_id"},
	"exceptions": {"max_ttl"},
	"sites":      {"replicate_timers_across_sites"},
	"throttling": {"target_latency", "max_tokens", "initial_token_rate", "min_token_rate", "max_token_rate"},
	"dns":        {"servers", "timeout", "port"},
	"alarms":     {"enabled"},
	"timers":     {"id-format"},
}

// checkKeys returns a warning, in file order, for every section and key of
// f that the file in role does not read. path names the file.
func checkKeys(f *ini.File, path string, role fileRole) []Warning {
	var ws []Warning
	for _, sec := range f.Sections() {
		name := sec.Name()
		if name == ini.DefaultSection {
			name = ""
		}
		keys := sec.KeyStrings()
		if len(keys) == 0 && name != "" && !knownSection(name) {
			ws = append(ws, Warning{File: path, Section: name, Kind: UnknownSection, Message: "unknown configuration section; not read"})
		}
		for _, k := range keys {
			if kind, msg := checkKey(name, k, role); kind != 0 {
				ws = append(ws, Warning{File: path, Section: name, Key: k, Kind: kind, Message: msg})
			}
		}
	}
	return ws
}

// checkKey returns why section.key in the file in role is not read, or 0
// if it is.
func checkKey(section, key string, role fileRole) (WarningKind, string) {
	if home, ok := readKeys[section][key]; ok {
		if home == role {
			return 0, ""
		}
		return OtherFile, "not read from this file; read from " + home.String()
	}
	switch {
	case slices.Contains(originalKeys[section], key):
		return OriginalOnly, "ignored: setting of the original Chronos not used here"
	case section == "":
		return UnknownKey, "configuration key outside any section; not read"
	case knownSection(section):
		return UnknownKey, "unknown configuration key; not read"
	default:
		return UnknownSection, "unknown configuration section; not read"
	}
}

// knownSection reports whether this implementation or the original reads
// any key of section.
func knownSection(section string) bool {
	_, ours := readKeys[section]
	_, original := originalKeys[section]
	return ours || original
}
