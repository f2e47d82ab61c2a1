package observe

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRouteOf proves the route label is one of a fixed set whatever the
// path, the timer IDs and a client's junk never reaching it.
func TestRouteOf(t *testing.T) {
	tests := []struct{ method, target, want string }{
		{"POST", "/timers", "timers"},
		{"PUT", "/timers", "timers"},
		{"GET", "/timers?node-for-replicas=a&cluster-view-id=1", "resync"},
		{"PUT", "/timers/0123456789abcdef0123456789abcdef", "timer"},
		{"DELETE", "/timers/x", "timer"},
		{"DELETE", "/timers/references", "references"},
		{"GET", "/ping", "ping"},
		{"HEAD", "/ping", "ping"},
		{"GET", "/status", "status"},
		{"GET", "/metrics", "metrics"},
		{"POST", "/internal/batch", "batch"},
		{"POST", "/internal%2Fbatch", "other"},
		{"GET", "/", "other"},
		{"GET", "/timers%2Freferences", "other"},
		{"GET", "/pingx", "other"},
		{"GET", "/TIMERS", "other"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.target, nil)
		if got := routeOf(r); got != tt.want {
			t.Errorf("routeOf(%s %s) = %q, want %q", tt.method, tt.target, got, tt.want)
		}
	}
}

// FuzzRouteOf proves the route label of any request a client can send is
// one of the fixed set, so that /metrics holds a bounded number of series
// whatever arrives. The corpus lives under testdata/fuzz/FuzzRouteOf.
func FuzzRouteOf(f *testing.F) {
	f.Add("GET", "/timers?x=%zz")
	f.Add("PUT", "/timers/0123456789abcdef0123456789abcdef")
	f.Add("DELETE", "/timers/references/../x")
	f.Add("GET", "//status")
	routes := []string{routeTimers, routeResync, routeTimer, routeReferences, routePing, routeStatus, routeMetrics, routeBatch, routeOther}
	f.Fuzz(func(t *testing.T, method, target string) {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(method + " " + target + " HTTP/1.1\r\nHost: x\r\n\r\n")))
		if err != nil {
			return
		}
		if got := routeOf(r); !slices.Contains(routes, got) {
			t.Fatalf("routeOf(%s %s) = %q, not a route", method, target, got)
		}
	})
}

// TestCodeLabel proves the code label is the code in decimal, from the
// table and beyond it.
func TestCodeLabel(t *testing.T) {
	for _, code := range []int{-1, 0, 99, 100, 200, 204, 404, 503, 999, 1000, 12345} {
		if got, want := codeLabel(code), strconv.Itoa(code); got != want {
			t.Errorf("codeLabel(%d) = %q, want %q", code, got, want)
		}
	}
}
