package localcluster

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeAddrsDrawsBelowTheEphemeralRange proves that a port handed out
// is one no outgoing connection can take as its source port, where the
// kernel says which those are, and that none is handed out twice.
func TestFreeAddrsDrawsBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if low-1-quietLow < quietSpan {
		// Not a failure: listenFree then takes the kernel's pick on
		// purpose, and FreeAddrs is tested by every process test.
		t.Skipf("nothing to prove here: the kernel's ephemeral range starts at %d (0: not Linux), leaving fewer than %d ports above %d, so ports come from the kernel's pick; lifted on a machine whose ephemeral range starts above %d (Linux's default, 32768)", low, quietSpan, quietLow, quietLow+quietSpan)
	}
	addrs, err := FreeAddrs(20)
	if err != nil {
		t.Fatal(err)
	}
	base, err := FreeRun(3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, a := range addrs {
		_, p, _ := net.SplitHostPort(a)
		port, _ := strconv.Atoi(p)
		seen[port] = true
	}
	for i := range 3 {
		seen[base+i] = true
	}
	if len(seen) != 23 {
		t.Errorf("FreeAddrs(20) %v and FreeRun(3) from %d share a port", addrs, base)
	}
	for port := range seen {
		if port < quietLow || port >= low {
			t.Errorf("port %d handed out, want one in [%d, %d)", port, quietLow, low)
		}
	}
}
