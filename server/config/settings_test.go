package config

import (
	"flag"
	"reflect"
	"strings"
	"testing"
)

// TestSettingsTableRows proves that every row of the settings table is
// complete: a key unique in its section, a flag (when it has one) whose
// usage quotes a placeholder, both docs columns and an example.
func TestSettingsTableRows(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range table {
		if s.section == "" || s.key == "" || seen[s.id()] {
			t.Errorf("%s: no section or key, or given twice", s.id())
		}
		seen[s.id()] = true
		if s.what == "" || s.byDefault == "" || s.example == "" || s.bind.parse == nil {
			t.Errorf("%s: what %q, default %q, example %q, or no binding", s.id(), s.what, s.byDefault, s.example)
		}
		for _, u := range []struct{ name, usage string }{{s.flag, s.usage}, {s.fileFlag, s.fileUsage}} {
			if u.name != "" && placeholder(u.usage) == "" {
				t.Errorf("%s: --%s's usage %q quotes no placeholder in backquotes", s.id(), u.name, u.usage)
			}
		}
		if s.fileFlag != "" && s.flag == "" || s.looseFlag && s.list {
			t.Errorf("%s: a file flag needs a flag, and a loose flag is single-valued", s.id())
		}
	}
}

// TestSettingsReachTheirField proves that each setting's example, given
// in a file, changes exactly one field of the configuration, no two
// settings the same one, and that its flag, given the same value, sets
// the same configuration as the file: a row bound to the wrong field, or a
// flag that parses differently from its key, fails here.
func TestSettingsReachTheirField(t *testing.T) {
	owner := map[string]string{}
	for i := range table {
		s := &table[i]
		fromFile := Default()
		if err := Parse([]byte("["+s.section+"]\n"+s.key+" = "+s.example+"\n"), &fromFile); err != nil {
			t.Errorf("%s = %s: %v", s.id(), s.example, err)
			continue
		}
		changed := changedFields("", reflect.ValueOf(Default()), reflect.ValueOf(fromFile))
		if len(changed) != 1 {
			t.Errorf("%s = %s changes the fields %v, want one", s.id(), s.example, changed)
			continue
		}
		if prev, ok := owner[changed[0]]; ok {
			t.Errorf("%s and %s both set %s", prev, s.id(), changed[0])
		}
		owner[changed[0]] = s.id()
		if s.flag == "" {
			continue
		}
		fromFlag := Default()
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		var f Flags
		f.Register(fs)
		if err := fs.Parse([]string{"--" + s.flag, s.example}); err != nil {
			t.Errorf("--%s %s: %v", s.flag, s.example, err)
			continue
		}
		f.settings.apply(&fromFlag)
		fromFlag.Warnings = fromFile.Warnings
		if !reflect.DeepEqual(fromFlag, fromFile) {
			t.Errorf("--%s %s gives %+v\nwant what %s gives, %+v", s.flag, s.example, fromFlag, s.id(), fromFile)
		}
	}
}

// changedFields names the fields of the structs a and b that differ,
// looking into nested structs (Node.Cluster).
func changedFields(prefix string, a, b reflect.Value) []string {
	var out []string
	for i := range a.NumField() {
		name := prefix + a.Type().Field(i).Name
		fa, fb := a.Field(i), b.Field(i)
		switch {
		case fa.Kind() == reflect.Struct:
			out = append(out, changedFields(name+".", fa, fb)...)
		case fa.CanInterface() && !reflect.DeepEqual(fa.Interface(), fb.Interface()):
			out = append(out, name)
		}
	}
	return out
}

// TestListFlagsReplaceTheFiles proves that each list flag adds up over
// its uses and, given at all, replaces the files' list rather than adding
// to it: the file's item and the flag's two leave the flag's two.
func TestListFlagsReplaceTheFiles(t *testing.T) {
	for i := range table {
		s := &table[i]
		if !s.list || s.flag == "" {
			continue
		}
		file, _, err := parseFile([]byte("["+s.section+"]\n"+s.key+" = "+s.example+"\n"), "")
		if err != nil {
			t.Fatalf("%s: %v", s.id(), err)
		}
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		var f Flags
		f.Register(fs)
		if err := fs.Parse([]string{"--" + s.flag, s.example, "--" + s.flag, s.example}); err != nil {
			t.Fatal(err)
		}
		cfg := Default()
		file.apply(&cfg)
		f.settings.apply(&cfg)
		changed := changedFields("", reflect.ValueOf(Default()), reflect.ValueOf(cfg))
		if len(changed) != 1 {
			t.Fatalf("--%s changes %v, want one field", s.flag, changed)
		}
		v := reflect.ValueOf(cfg)
		for _, name := range strings.Split(changed[0], ".") {
			v = v.FieldByName(name)
		}
		if v.Len() != 2 {
			t.Errorf("--%s twice after a file's line: %s holds %d items, want 2", s.flag, changed[0], v.Len())
		}
	}
}
