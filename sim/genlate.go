package sim

import (
	"fmt"
	"time"
)

// Mixes of the late and replayed messages genLate adds.
const (
	mixLate   = "late"
	mixReplay = "replay"
)

// genLate adds the faults of a real network that a clean one never shows
// (netsim/late.go), drawn from faults after every other draw of the
// plan, so that it moves no earlier choice. One plan in four holds one
// link (one hold in three a client's link to a node) and heals it 1 to
// 60 s later: what the link kept is delivered after its senders gave
// up, within the nodes' message-age window or long past it. One plan in
// four replays, at a moment of the safety phase, the requests one node
// sent every other node 1 to 60 s or more before, as an attacker who
// captured them would. Only plans that cut links (partition, one-way,
// clog) draw them; the mix names them (mixLate, mixReplay). The hold's
// heal is the plan's heal (OpHeal), which ends every cut in force then,
// as a heal of the real network would.
func genLate(p *Plan, faults Source, safety time.Duration) {
	if !p.enabled("partition") && !p.enabled("one-way") && !p.enabled("clog") {
		return
	}
	node := func(label string) string { return fmt.Sprintf("n%d", 1+faults.IntN(label, p.Nodes)) }
	at := func(label string) time.Duration {
		return time.Duration(faults.IntN(label, int(safety/time.Second))) * time.Second
	}
	if faults.IntN("hold", 4) == 0 {
		from, to := node("hold-from"), node("hold-to")
		if faults.IntN("hold-client", 3) == 0 {
			from = fmt.Sprintf("client%d", 1+faults.IntN("hold-client-from", p.Clients))
		}
		start, length := at("hold-at"), time.Duration(1+faults.IntN("hold-for", 60))*time.Second
		if from != to {
			p.Mix = append(p.Mix, mixLate)
			p.Steps = append(p.Steps, Step{At: start, Op: OpHold, Side: []string{from}, Peers: []string{to}, OneWay: true})
			if start+length < safety {
				p.Steps = append(p.Steps, Step{At: start + length, Op: OpHeal})
			}
		}
	}
	if faults.IntN("replay", 4) == 0 {
		from := node("replay-from")
		var others []string
		for i := 1; i <= p.Nodes; i++ {
			if n := fmt.Sprintf("n%d", i); n != from {
				others = append(others, n)
			}
		}
		p.Mix = append(p.Mix, mixReplay)
		older := time.Duration(1+faults.IntN("replay-older", 60)) * time.Second
		p.Steps = append(p.Steps, Step{At: at("replay-at"), Op: OpReplay, Side: []string{from}, Peers: others, OneWay: true, For: older})
	}
}
