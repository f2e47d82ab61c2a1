package config

import (
	"log/slog"
	"slices"

	"gopkg.in/ini.v1"
)

// Warning is a part of the configuration that was accepted, as the
// original Chronos accepts it, but is not read: a line of an INI file, an
// entry of the DNS file, or a file named on the command line that does not
// exist. A mistake to show, not to refuse.
type Warning struct {
	// File is the file's path; empty for data given to Parse or
	// ParseDNSConfig.
	File string
	// Section is "" for a key before the first section header; in the
	// DNS file it is the path of the JSON object ("hostnames[2]").
	Section string
	// Key is "" for a section that holds no keys, and for a whole file.
	Key string
	// Kind says why the line is not read, Message says it in words.
	Kind    WarningKind
	Message string
}

// WarningKind is why a part of the configuration is not read.
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
	// MissingFile is a configuration file named on the command line that
	// does not exist: its settings take their defaults, as in the
	// original.
	MissingFile
	// UnsupportedRecord is an entry of the DNS configuration file this
	// implementation does not use, such as a record type other than A
	// and CNAME.
	UnsupportedRecord
)

// LogWarnings logs each warning at Warn level with its file, section and
// key.
func LogWarnings(log *slog.Logger, ws []Warning) {
	for _, w := range ws {
		log.Warn(w.Message, "file", w.File, "section", w.Section, "key", w.Key)
	}
}

// readKeys is every key this implementation reads, by section: the
// table's. Any file may hold any of them (docs/design.md 4.9).
var readKeys = fileKeys()

// original is a section's keys that the original Chronos reads (from any
// of its files, in any of its releases) and this implementation does not
// use, and why, for docs/configuration.md.
type original struct {
	section string
	keys    []string
	why     string
}

// originals are the original's keys not used here, in the docs' order.
var originals = []original{
	{"http", []string{"threads", "gr_threads"}, "the Go runtime schedules requests"},
	{"identity", []string{"deployment_id"}, ""},
	{"dns", []string{"servers", "timeout", "port"}, "the system resolver is used, after `dns.json`"},
	{"exceptions", []string{"max_ttl"}, ""},
	{"throttling", []string{"target_latency", "max_tokens", "initial_token_rate", "min_token_rate", "max_token_rate"}, "a node at a limit answers 503 (docs/design.md 4.4)"},
	{"alarms", []string{"enabled"}, ""},
	{"timers", []string{"id-format"}, "the ID format is fixed (docs/design.md 4.1)"},
}

// originalKeys are the keys of originals, by section.
var originalKeys = func() map[string][]string {
	keys := map[string][]string{}
	for _, o := range originals {
		keys[o.section] = append(keys[o.section], o.keys...)
	}
	return keys
}()

// checkKeys returns a warning, in file order, for every section and key of
// f that is not read. path names the file.
func checkKeys(f *ini.File, path string) []Warning {
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
			if kind, msg := checkKey(name, k); kind != 0 {
				ws = append(ws, Warning{File: path, Section: name, Key: k, Kind: kind, Message: msg})
			}
		}
	}
	return ws
}

// checkKey returns why section.key is not read, or 0 if it is.
func checkKey(section, key string) (WarningKind, string) {
	switch {
	case slices.Contains(readKeys[section], key):
		return 0, ""
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
