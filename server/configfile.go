package server

import (
	"fmt"
	"strings"

	"gopkg.in/ini.v1"
)

// MaxConfigFileBytes bounds a configuration file; real ones are a few
// hundred bytes.
const MaxConfigFileBytes = 1 << 20

// ParseLocalConfig applies the settings of a chronos.conf held in data
// ([http] bind-address, bind-port; [logging] level; [identity]
// instance_id; [callbacks] repeated allowed_host; [limits] memory_limit)
// to cfg. Other sections
// and keys are accepted and reported in cfg.Warnings, with no file name.
func ParseLocalConfig(data []byte, cfg *Config) error {
	s, ws, err := parseLocal(data, "")
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.apply(cfg)
	cfg.Warnings = append(cfg.Warnings, ws...)
	return nil
}

// ParseClusterConfig applies the settings of a chronos_cluster.conf held
// in data ([cluster] localhost, repeated node, joining, leaving, key;
// [sites] local_site, repeated remote_site = name=address) to cfg. Other
// sections and keys are accepted and reported in cfg.Warnings, with no
// file name.
func ParseClusterConfig(data []byte, cfg *Config) error {
	s, ws, err := parseCluster(data, "")
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

// parseLocal reads chronos.conf; path names it in the warnings.
func parseLocal(data []byte, path string) (settings, []Warning, error) {
	f, err := loadINI(data)
	if err != nil {
		return settings{}, nil, err
	}
	s, err := localSettings(f)
	if err != nil {
		return settings{}, nil, err
	}
	return s, checkKeys(f, path, localFile), nil
}

func localSettings(f *ini.File) (settings, error) {
	var s settings
	if v, ok := last(f, "http", "bind-address"); ok {
		s.bindAddress.set(v)
	}
	if v, ok := last(f, "http", "bind-port"); ok {
		p, err := parsePort("[http] bind-port", v)
		if err != nil {
			return s, err
		}
		s.bindPort.set(p)
	}
	if v, ok := last(f, "logging", "level"); ok {
		l, err := parseLevel("[logging] level", v)
		if err != nil {
			return s, err
		}
		s.logLevel.set(l)
	}
	if v, ok := last(f, "identity", "instance_id"); ok {
		id, err := parseInstanceID("[identity] instance_id", v)
		if err != nil {
			return s, err
		}
		s.instanceID.set(id)
	}
	for _, v := range values(f, "callbacks", "allowed_host") {
		hosts, err := parseCallbackHosts("[callbacks] allowed_host", v)
		if err != nil {
			return s, err
		}
		s.callbacks.set(append(s.callbacks.v, hosts...))
	}
	if v, ok := last(f, "limits", "memory_limit"); ok {
		m, err := parseMemoryLimit("[limits] memory_limit", v)
		if err != nil {
			return s, err
		}
		s.memoryLimit.set(m)
	}
	return s, nil
}

// parseCluster reads chronos_cluster.conf; path names it in the
// warnings.
func parseCluster(data []byte, path string) (settings, []Warning, error) {
	f, err := loadINI(data)
	if err != nil {
		return settings{}, nil, err
	}
	s, err := clusterSettings(f, data)
	if err != nil {
		return settings{}, nil, err
	}
	return s, checkKeys(f, path, clusterFile), nil
}

// clusterSettings reads the settings of a cluster file; data is its text,
// to check the key for comment characters.
func clusterSettings(f *ini.File, data []byte) (settings, error) {
	var s settings
	if v, ok := last(f, "cluster", "localhost"); ok {
		if _, err := withPort("", v); err != nil {
			return s, fmt.Errorf("[cluster] localhost %q is not an address", v)
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
				return s, err
			}
			l.dst.set(append(l.dst.v, addrs...))
		}
	}
	if v, ok := last(f, "cluster", "key"); ok {
		if err := commentCut(data, "cluster", "key", v); err != nil {
			return s, err
		}
		k, err := parseClusterKey("[cluster] key", v)
		if err != nil {
			return s, err
		}
		s.clusterKey.set(k)
	}
	if v, ok := last(f, "sites", "local_site"); ok {
		s.localSite.set(v)
	}
	for _, v := range values(f, "sites", "remote_site") {
		site, err := parseSite("[sites] remote_site", v)
		if err != nil {
			return s, err
		}
		s.remoteSites.set(append(s.remoteSites.v, site))
	}
	return s, nil
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
