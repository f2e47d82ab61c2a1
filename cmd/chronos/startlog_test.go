//go:build unix

package main

import (
	"fmt"
	"testing"

	"github.com/chronos-timer/chronos/internal/proctest"
	"github.com/chronos-timer/chronos/node"
)

// TestProcessStartLog proves what the binary logs at start for a cluster
// configured with addresses only and no key: the instance number it
// derived from the membership, key_set=false with the warning that the
// internal API is open, and a warning naming the file, section and key of
// a mistyped setting. Only the first member is started: the test reads the
// log and sends nothing to the other.
func TestProcessStartLog(t *testing.T) {
	bin := proctest.Chronos(t)
	other := proctest.FreeAddr(t)
	p := startWith(t, bin, func(host, port string) (string, string) {
		return fmt.Sprintf("[http]\nbind-address = %s\nbind-port = %s\nbind_port = 7000\n\n[logging]\nlevel = 3\n", host, port),
			"[cluster]\nlocalhost = %[1]s\nnode = %[1]s\nnode = " + other + "\n"
	})
	ids, err := node.InstanceIDs(node.Membership{Nodes: []string{p.addr, other}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf(`msg=starting node=%s instance=%d instance_derived=true nodes=`, p.addr, ids[p.addr]),
		`key_set=false`,
		`level=WARN msg="no cluster key: the internal API (replication, pop notices, tombstones, resync) trusts the members' IP addresses alone,`,
		fmt.Sprintf(`level=WARN msg="unknown configuration key; not read" file=%s section=http key=bind_port`, p.localPath),
	} {
		// Written before the node serves, but the output pipe may bring
		// it after /status answered.
		if err := p.proc.AwaitLog(want, waitTimeout); err != nil {
			t.Errorf("log lacks %s: %v:\n%s", want, err, p.proc.Log())
		}
	}
}
