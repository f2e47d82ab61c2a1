package config

import (
	"fmt"
	"strings"

	"gopkg.in/ini.v1"
)

// MaxConfigFileBytes bounds a configuration file; real ones are a few
// hundred bytes.
const MaxConfigFileBytes = 1 << 20

// Parse applies the settings of a configuration file held in data
// to cfg, whichever file it is: every file may hold every section
// (docs/design.md 4.9). Sections and keys that are not read are accepted
// and reported in cfg.Warnings, with no file name.
func Parse(data []byte, cfg *Node) error {
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

// parseFile reads one configuration file: every key of the table it
// holds; path names it in the warnings.
func parseFile(data []byte, path string) (settings, []Warning, error) {
	f, err := loadINI(data)
	if err != nil {
		return nil, nil, err
	}
	l := settings{}
	for i := range table {
		if err := l.read(f, data, &table[i]); err != nil {
			return nil, nil, err
		}
	}
	return l, checkKeys(f, path), nil
}

// read takes s from f into l: every line of a list, the last line of a
// single value. data is the file's text, to check a secret for comment
// characters.
func (l settings) read(f *ini.File, data []byte, s *setting) error {
	if s.list {
		for _, v := range values(f, s.section, s.key) {
			items, err := s.bind.parse(s.id(), v)
			if err != nil {
				return err
			}
			l.give(s, items)
		}
		return nil
	}
	v, ok := last(f, s.section, s.key)
	if !ok {
		return nil
	}
	if s.secret {
		if err := commentCut(data, s.section, s.key, v); err != nil {
			return err
		}
	}
	x, err := s.bind.parse(s.id(), v)
	if err != nil {
		return err
	}
	l.give(s, x)
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
