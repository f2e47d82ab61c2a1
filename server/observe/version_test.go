package observe

import "testing"

// TestVersion proves the version a build sets wins over the build
// information, which says "devel" for a test binary.
func TestVersion(t *testing.T) {
	if got := BuildVersion(); got != "devel" {
		t.Errorf("BuildVersion() = %q in a test binary, want devel", got)
	}
	defer func(v string) { Version = v }(Version)
	Version = "v1.2.3"
	if got := BuildVersion(); got != "v1.2.3" {
		t.Errorf("BuildVersion() = %q with Version set, want v1.2.3", got)
	}
}
