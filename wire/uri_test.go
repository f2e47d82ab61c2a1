package wire

import (
	"net/url"
	"strconv"
	"testing"
)

// parsedURIError is checkURI's verdict through url.Parse alone: the rule
// plainURI must agree with.
func parsedURIError(uri string) bool {
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return true
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return true
		}
	}
	return false
}

// TestPlainURIAgreesWithURLParse proves the fast path of checkURI: every
// URL plainURI takes, url.Parse takes too, and the usual callbacks take
// the fast path while the unusual ones are left to url.Parse.
func TestPlainURIAgreesWithURLParse(t *testing.T) {
	for _, c := range []struct {
		uri   string
		plain bool
	}{
		{"http://127.0.0.1:9/cb", true},
		{"https://client.example/cb?a=b&c=d", true},
		{"http://client.example", true},
		{"http://h:65535/x", true},
		{"http://h:65536/x", false},
		{"http://h:0/x", false},
		{"http://h:080/x", false},
		{"http://h:/x", false},
		{"http://h:123456/x", false},
		{"http://:80/x", false},
		{"http:///x", false},
		{"HTTP://h/x", false},
		{"http://H/x", false},
		{"http://u@h/x", false},
		{"http://[::1]:80/x", false},
		{"http://h/x%20y", false},
		{"http://h/x#f", false},
		{"http://h/x y", false},
		{"ftp://h/x", false},
		{"http://h#x", false},
	} {
		if got := plainURI(c.uri); got != c.plain {
			t.Errorf("plainURI(%q) = %v, want %v", c.uri, got, c.plain)
		}
		if c.plain && parsedURIError(c.uri) {
			t.Errorf("plainURI(%q) takes a URL url.Parse refuses", c.uri)
		}
	}
}

// FuzzPlainURI proves that plainURI never takes a URL checkURI's
// url.Parse would refuse.
func FuzzPlainURI(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:9/cb", "https://a.b/c?d=e", "http://h:99999", "http://h:1/%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		if plainURI(uri) && parsedURIError(uri) {
			t.Errorf("plainURI(%q) takes a URL url.Parse refuses", uri)
		}
	})
}

// TestCheckURIAllocatesNothingForAPlainURL proves the point of the fast
// path: a usual callback URL is checked without an allocation.
func TestCheckURIAllocatesNothingForAPlainURL(t *testing.T) {
	if got := testing.AllocsPerRun(100, func() { _ = checkURI("http://127.0.0.1:9/cb?x=1") }); got != 0 {
		t.Errorf("checkURI allocated %v times, want 0", got)
	}
}
