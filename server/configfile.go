package server

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/ini.v1"
)

// MaxConfigFileBytes bounds a configuration file; real ones are a few
// hundred bytes.
const MaxConfigFileBytes = 1 << 20

// ParseConfig applies the settings of a configuration file held in data
// to cfg, whichever file it is: every file may hold every section
// (docs/design.md 4.9). Sections and keys that are not read are accepted
// and reported in cfg.Warnings, with no file name.
func ParseConfig(data []byte, cfg *Config) error {
	s, ws, err := parseFile(data, "")
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.apply(cfg)
	cfg.Warnings = append(cfg.Warnings, ws...)
	return nil
}

// loadINI parses data; repeated keys are kept (AllowShadows) because the
// cluster file lists one node per line.
func loadINI(data []byte) (*ini.File, error) {
	if len(data) > MaxConfigFileBytes {
		return nil, fmt.Errorf("file is larger than %d bytes", MaxConfigFileBytes)
	}
	f, err := ini.LoadSources(ini.LoadOptions{AllowShadows: true}, data)
	if err != nil {
		return nil, fmt.Errorf("not an INI file: %w", err)
	}
	return f, nil
}

// values returns every value of section.key in file order, or nil if the
// key is absent.
func values(f *ini.File, section, key string) []string {
	sec, err := f.GetSection(section)
	if err != nil || !sec.HasKey(key) {
		return nil
	}
	return sec.Key(key).ValueWithShadows()
}

// last returns the last value of section.key: a repeated single-valued key
// behaves as if the later line overrode the earlier. A key given only
// empty values ("key =") is present with the value "", so that the
// mistake is refused rather than read as absent. (The INI parser drops
// empty values among non-empty ones.)
func last(f *ini.File, section, key string) (string, bool) {
	vs := values(f, section, key)
	if len(vs) == 0 {
		sec, err := f.GetSection(section)
		return "", err == nil && sec.HasKey(key)
	}
	return strings.TrimSpace(vs[len(vs)-1]), true
}

// parseFile reads one configuration file; path names it in the
// warnings.
func parseFile(data []byte, path string) (settings, []Warning, error) {
	f, err := loadINI(data)
	if err != nil {
		return settings{}, nil, err
	}
	var s settings
	for _, read := range []func(*ini.File, []byte, *settings) error{readHTTP, readLogging, readIdentity, readLimits, readCluster, readSites, readStorage} {
		if err := read(f, data, &s); err != nil {
			return settings{}, nil, err
		}
	}
	return s, checkKeys(f, path), nil
}

func readHTTP(f *ini.File, _ []byte, s *settings) error {
	for _, k := range []struct {
		section, key string
		dst          *opt[string]
	}{{"http", "tls_cert_file", &s.tlsCert}, {"http", "tls_key_file", &s.tlsKey}, {"cluster", "tls_ca_file", &s.tlsCA}} {
		if v, ok := last(f, k.section, k.key); ok {
			p, err := parseFolder("["+k.section+"] "+k.key, v)
			if err != nil {
				return err
			}
			k.dst.set(p)
		}
	}
	if v, ok := last(f, "http", "bind-address"); ok {
		s.bindAddress.set(v)
	}
	if v, ok := last(f, "http", "bind-port"); ok {
		p, err := parsePort("[http] bind-port", v)
		if err != nil {
			return err
		}
		s.bindPort.set(p)
	}
	return nil
}

func readLogging(f *ini.File, _ []byte, s *settings) error {
	if v, ok := last(f, "logging", "level"); ok {
		l, err := parseLevel("[logging] level", v)
		if err != nil {
			return err
		}
		s.logLevel.set(l)
	}
	if v, ok := last(f, "logging", "format"); ok {
		format, err := parseLogFormat("[logging] format", v)
		if err != nil {
			return err
		}
		s.logFormat.set(format)
	}
	if v, ok := last(f, "logging", "folder"); ok {
		d, err := parseFolder("[logging] folder", v)
		if err != nil {
			return err
		}
		s.logFolder.set(d)
	}
	return nil
}

func readIdentity(f *ini.File, _ []byte, s *settings) error {
	if v, ok := last(f, "identity", "instance_id"); ok {
		id, err := parseInstanceID("[identity] instance_id", v)
		if err != nil {
			return err
		}
		s.instanceID.set(id)
	}
	return nil
}

// readLimits reads [callbacks] and [limits]: what the node lets in.
func readLimits(f *ini.File, _ []byte, s *settings) error {
	for _, v := range values(f, "callbacks", "allowed_host") {
		hosts, err := parseCallbackHosts("[callbacks] allowed_host", v)
		if err != nil {
			return err
		}
		s.callbacks.set(append(s.callbacks.v, hosts...))
	}
	if v, ok := last(f, "limits", "memory_limit"); ok {
		m, err := parseMemoryLimit("[limits] memory_limit", v)
		if err != nil {
			return err
		}
		s.memoryLimit.set(m)
	}
	if v, ok := last(f, "limits", "max_timers"); ok {
		n, err := parseCount("[limits] max_timers", v)
		if err != nil {
			return err
		}
		s.maxTimers.set(n)
	}
	if v, ok := last(f, "limits", "max_timer_bytes"); ok {
		b, err := parseSize("[limits] max_timer_bytes", v, MinTimerBytes)
		if err != nil {
			return err
		}
		s.timerBytes.set(b)
	}
	return nil
}

// readStorage reads [storage]: where the node keeps its timers.
func readStorage(f *ini.File, _ []byte, s *settings) error {
	if v, ok := last(f, "storage", "dir"); ok {
		d, err := parseStorageDir("[storage] dir", v)
		if err != nil {
			return err
		}
		s.storageDir.set(d)
	}
	return nil
}

// readCluster reads [cluster]; data is the file's text, to check the key
// for comment characters.
func readCluster(f *ini.File, data []byte, s *settings) error {
	if v, ok := last(f, "cluster", "localhost"); ok {
		if err := checkAddress("", v); err != nil {
			return fmt.Errorf("[cluster] localhost %q is not an address", v)
		}
		s.localhost.set(v)
	}
	for _, l := range []struct {
		key string
		dst *opt[[]string]
	}{{"node", &s.nodes}, {"joining", &s.joining}, {"leaving", &s.leaving}} {
		for _, v := range values(f, "cluster", l.key) {
			addrs, err := parseAddresses("[cluster] "+l.key, v)
			if err != nil {
				return err
			}
			l.dst.set(append(l.dst.v, addrs...))
		}
	}
	if v, ok := last(f, "cluster", "key"); ok {
		if err := commentCut(data, "cluster", "key", v); err != nil {
			return err
		}
		k, err := parseClusterKey("[cluster] key", v)
		if err != nil {
			return err
		}
		s.clusterKey.set(k)
	}
	if v, ok := last(f, "cluster", "accepted_key"); ok {
		if err := commentCut(data, "cluster", "accepted_key", v); err != nil {
			return err
		}
		k, err := parseClusterKey("[cluster] accepted_key", v)
		if err != nil {
			return err
		}
		s.acceptedKey.set(k)
	}
	for _, d := range []struct {
		key string
		dst *opt[time.Duration]
	}{{"max_message_age", &s.messageAge}, {"max_clock_skew", &s.clockSkew}} {
		if v, ok := last(f, "cluster", d.key); ok {
			t, err := parseDuration("[cluster] "+d.key, v, d.key == "max_clock_skew")
			if err != nil {
				return err
			}
			d.dst.set(t)
		}
	}
	return nil
}

func readSites(f *ini.File, _ []byte, s *settings) error {
	if v, ok := last(f, "sites", "local_site"); ok {
		s.localSite.set(v)
	}
	for _, v := range values(f, "sites", "remote_site") {
		site, err := parseSite("[sites] remote_site", v)
		if err != nil {
			return err
		}
		s.remoteSites.set(append(s.remoteSites.v, site))
	}
	if v, ok := last(f, "sites", "replicate_timers_across_sites"); ok {
		b, err := parseBool("[sites] replicate_timers_across_sites", v)
		if err != nil {
			return err
		}
		s.replicate.set(b)
	}
	return nil
}

// commentCut fails if an inline comment cut the value v of section.key
// short: the INI parser starts a comment at '#' or ';' even inside a word,
// which would silently shorten a secret. A comment after a space is fine.
// The error names the key, never its value.
func commentCut(data []byte, section, key, v string) error {
	f, err := ini.LoadSources(ini.LoadOptions{AllowShadows: true, IgnoreInlineComment: true}, data)
	if err != nil {
		return nil // loadINI read it; nothing more to learn
	}
	raw, _ := last(f, section, key)
	if strings.HasPrefix(raw, v) && len(raw) > len(v) && strings.ContainsRune("#;", rune(raw[len(v)])) {
		return fmt.Errorf("[%s] %s holds '#' or ';', which start a comment in this file; use letters and digits", section, key)
	}
	return nil
}
