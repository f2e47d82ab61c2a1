package node

import "testing"

// TestCanonicalKey proves header names are spelled as net/http spells
// them, and that a name already canonical comes back as it is.
func TestCanonicalKey(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"x-sequence-number", "X-Sequence-Number"},
		{"X-SEQUENCE-NUMBER", "X-Sequence-Number"},
		{"X-Sequence-Number", "X-Sequence-Number"},
		{"content-type", "Content-Type"},
		{"-a", "-A"},
		{"a--b", "A--B"},
		{"x_y", "X_y"},
		{"1abc", "1abc"},
	}
	for _, c := range cases {
		if got := CanonicalKey(c.in); got != c.want {
			t.Errorf("CanonicalKey(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := isCanonical(c.in); got != (c.in == c.want) {
			t.Errorf("isCanonical(%q) = %v, want %v", c.in, got, c.in == c.want)
		}
	}
}
