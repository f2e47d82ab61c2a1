package node

import (
	"strconv"
	"strings"
	"testing"
)

// TestResyncPageConfigured proves Config.ResyncPage sets the Range a
// resync asks its peers for (0 keeps DefaultResyncPage), and that Validate
// refuses a page size outside 0..MaxResyncPage, naming the field.
func TestResyncPageConfigured(t *testing.T) {
	for _, tc := range []struct{ page, want int }{{0, DefaultResyncPage}, {3, 3}, {MaxResyncPage, MaxResyncPage}} {
		h := newHarness(t, func(c *Config) {
			c.Address = "10.0.0.1:7253"
			c.Cluster = Membership{Nodes: []string{"10.0.0.1:7253", "10.0.0.2:7253"}}
			c.ResyncPage = tc.page
		})
		h.node.Resync(false)
		got := h.net.take("http://10.0.0.2:7253/timers?")
		if len(got) != 1 {
			t.Fatalf("ResyncPage %d: got %d page requests to the peer, want 1", tc.page, len(got))
		}
		if r := got[0].req.Header.Get(HeaderRange); r != strconv.Itoa(tc.want) {
			t.Errorf("ResyncPage %d: got Range %q, want %d", tc.page, r, tc.want)
		}
	}
	for _, bad := range []int{-1, MaxResyncPage + 1} {
		cfg := DefaultConfig()
		cfg.Clock, cfg.Network = &manualClock{now: epoch}, &heldNet{}
		cfg.ResyncPage = bad
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "ResyncPage") {
			t.Errorf("ResyncPage %d: Validate gave %v, want an error naming ResyncPage", bad, err)
		}
	}
}
