package config

import (
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/node"
)

// Original Chronos logs at numeric levels 0 (error) to 5 (debug).
var (
	levelsByNumber = []slog.Level{slog.LevelError, slog.LevelWarn, slog.LevelInfo, slog.LevelInfo, slog.LevelDebug, slog.LevelDebug - 4}
	levelsByName   = map[string]slog.Level{
		"error": slog.LevelError, "warning": slog.LevelWarn, "warn": slog.LevelWarn,
		"status": slog.LevelInfo, "info": slog.LevelInfo,
		"verbose": slog.LevelDebug, "debug": slog.LevelDebug - 4,
	}
)

// parseLevel reads a log level, numeric (0-5) or by name.
func parseLevel(field, v string) (slog.Level, error) {
	v = strings.TrimSpace(v)
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 || n >= len(levelsByNumber) {
			return 0, fmt.Errorf("%s %q is not in 0..%d", field, v, len(levelsByNumber)-1)
		}
		return levelsByNumber[n], nil
	}
	if l, ok := levelsByName[strings.ToLower(v)]; ok {
		return l, nil
	}
	return 0, fmt.Errorf("%s %q is not a level (0-5, error, warning, status, info, verbose, debug)", field, v)
}

// The log formats ([logging] format).
const (
	LogText = "text"
	LogJSON = "json"
)

// parseLogFormat reads a log format: text or json, in any case.
func parseLogFormat(field, v string) (string, error) {
	switch f := strings.ToLower(strings.TrimSpace(v)); f {
	case LogText, LogJSON:
		return f, nil
	}
	return "", fmt.Errorf("%s %q is not a log format (text or json)", field, v)
}

// boolWords are the spellings of a boolean the original's option parser
// takes, and so this one.
var boolWords = map[string]bool{
	"true": true, "yes": true, "on": true, "1": true,
	"false": false, "no": false, "off": false, "0": false,
}

// parseBool reads a boolean: true, yes, on, 1 or false, no, off, 0, in
// any case.
func parseBool(field, v string) (bool, error) {
	b, ok := boolWords[strings.ToLower(strings.TrimSpace(v))]
	if !ok {
		return false, fmt.Errorf("%s %q is not a boolean (true or false)", field, v)
	}
	return b, nil
}

// parseFolder reads a folder path: not empty, no control characters.
func parseFolder(field, v string) (string, error) {
	d := strings.TrimSpace(v)
	if d == "" || strings.ContainsFunc(d, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return "", fmt.Errorf("%s %q is not a folder", field, v)
	}
	return d, nil
}

// parseStorageDir reads the storage folder: a folder, or empty for none
// (memory only).
func parseStorageDir(field, v string) (string, error) {
	if strings.TrimSpace(v) == "" {
		return "", nil
	}
	return parseFolder(field, v)
}

// parsePort reads a TCP port.
func parsePort(field, v string) (int, error) {
	p, ok := portNumber(strings.TrimSpace(v))
	if !ok {
		return 0, fmt.Errorf("%s %q is not a port in 1..65535", field, v)
	}
	return p, nil
}

// parseInstanceID reads a node instance number.
func parseInstanceID(field, v string) (int, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
	if err != nil || n > node.MaxInstanceID {
		return 0, fmt.Errorf("%s %q is not an integer in 0..%d", field, v, node.MaxInstanceID)
	}
	return int(n), nil
}

// memoryUnits are the suffixes of a memory limit, as GOMEMLIMIT spells
// them, longest first so that "B" does not cut "MiB" short.
var memoryUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

// parseGCHeadroom reads a percent from 1 to 100 ("25%" or "25"), or "off"
// (0).
func parseGCHeadroom(field, v string) (int, error) {
	s := strings.TrimSpace(v)
	if s == "off" {
		return 0, nil
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(s, "%"), 10, 8)
	if err != nil || n == 0 || n > 100 {
		return 0, fmt.Errorf("%s %q is not a percent from 1 to 100 (e.g. 25%%) or off", field, v)
	}
	return int(n), nil
}

// parseMemoryLimit reads a soft memory limit: a size (parseSize) of at
// least MinMemoryLimit.
func parseMemoryLimit(field, v string) (int64, error) {
	return parseSize(field, v, MinMemoryLimit)
}

// maxDuration bounds the durations of the configuration: an hour.
const maxDuration = time.Hour

// parseDuration reads a duration such as "7s" or "500ms", above 0 (or at
// least 0 when zero is allowed) and at most maxDuration.
func parseDuration(field, v string, zero bool) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 || d == 0 && !zero || d > maxDuration {
		return 0, fmt.Errorf("%s %q is not a duration between %s and %v (e.g. 7s)", field, v, map[bool]string{true: "0", false: "1ns"}[zero], maxDuration)
	}
	return d, nil
}

// parseCount reads a count of at least 1.
func parseCount(field, v string) (int, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 31)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%s %q is not a whole number from 1 to %d", field, v, math.MaxInt32)
	}
	return int(n), nil
}

// parseSize reads a whole number of bytes with an optional unit B, KiB,
// MiB, GiB or TiB ("2GiB", "1536MiB"), as GOMEMLIMIT takes it, of at least
// least bytes.
func parseSize(field, v string, least int64) (int64, error) {
	s := strings.TrimSpace(v)
	shift := uint(0)
	for _, u := range memoryUnits {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, shift = strings.TrimSpace(rest), u.shift
			break
		}
	}
	n, err := strconv.ParseUint(s, 10, 63)
	if err != nil || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("%s %q is not a size in bytes (a whole number with an optional unit B, KiB, MiB, GiB or TiB, e.g. 2GiB)", field, v)
	}
	if b := int64(n << shift); b < least {
		return 0, fmt.Errorf("%s %q is below the least, %d MiB", field, v, least>>20)
	}
	return int64(n << shift), nil
}

// parseAddresses reads one value of an address list; a value may hold
// several addresses separated by commas.
func parseAddresses(field, v string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(v, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if err := checkAddress(field, a); err != nil {
			return nil, fmt.Errorf("%s %q is not an address", field, a)
		}
		out = append(out, a)
	}
	return out, nil
}

// parseSite reads "name=address".
func parseSite(field, v string) (node.Site, error) {
	name, addr, ok := strings.Cut(v, "=")
	name, addr = strings.TrimSpace(name), strings.TrimSpace(addr)
	if !ok || name == "" || addr == "" {
		return node.Site{}, fmt.Errorf("%s %q is not name=address", field, v)
	}
	if err := checkAddress(field, addr); err != nil {
		return node.Site{}, fmt.Errorf("%s %q has no valid address", field, v)
	}
	return node.Site{Name: name, Address: addr}, nil
}

// parseClusterKey reads the cluster key. Its errors never hold the key.
func parseClusterKey(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", fmt.Errorf("%s is empty; remove it to run without a key", field)
	}
	if len(v) < node.MinClusterKeyBytes {
		return "", fmt.Errorf("%s is %d bytes, fewer than %d", field, len(v), node.MinClusterKeyBytes)
	}
	return v, nil
}

// parseCallbackHosts reads one value of the callback-host allow-list; a
// value may hold several entries separated by commas.
func parseCallbackHosts(field, v string) ([]string, error) {
	var out []string
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if !validCallbackHost(e) {
			return nil, fmt.Errorf("%s %q is not a host, host:port or IP prefix", field, e)
		}
		out = append(out, e)
	}
	return out, nil
}

// validCallbackHost reports whether e is an allow-list entry: an IP prefix
// ("127.0.0.0/8"), a host and port ("cb.example:8080", "[::1]:80") or a
// host ("cb.example", "::1", "[::1]"). It is at least as strict as the
// node's own check (node.Config.Validate).
func validCallbackHost(e string) bool {
	if _, err := netip.ParsePrefix(e); err == nil {
		return true
	}
	if host, port, err := net.SplitHostPort(e); err == nil {
		_, ok := portNumber(port)
		return ok && validHost(host)
	}
	return validHost(strings.TrimSuffix(strings.TrimPrefix(e, "["), "]"))
}

// parseText reads a value taken as written, but for the spaces around it.
func parseText(_, v string) (string, error) {
	return strings.TrimSpace(v), nil
}

// parseLocalhost reads this node's address, with or without a port.
func parseLocalhost(field, v string) (string, error) {
	if err := checkAddress(field, v); err != nil {
		return "", fmt.Errorf("%s %q is not an address", field, v)
	}
	return v, nil
}

// parseSites reads one remote site (parseSite) as a list of one.
func parseSites(field, v string) ([]node.Site, error) {
	s, err := parseSite(field, v)
	if err != nil {
		return nil, err
	}
	return []node.Site{s}, nil
}

// parseTimerBytes reads the byte budget of held timers: a size of at
// least MinTimerBytes.
func parseTimerBytes(field, v string) (int64, error) {
	return parseSize(field, v, MinTimerBytes)
}

// parseAge reads a duration above 0; parseSkew one that may be 0.
func parseAge(field, v string) (time.Duration, error)  { return parseDuration(field, v, false) }
func parseSkew(field, v string) (time.Duration, error) { return parseDuration(field, v, true) }
