package node

// Flow control of bulk sends. A resync and a hand-off send a message for
// each timer they move, to a few peers, all at once: a join of a node to
// three that hold a million timers hands each old node's hundred
// thousand moved copies to the one new node. Handed to the driver in one
// go, they queue there behind each other; the driver sheds a message
// that waits past its MaxWait (it must: a message's stamp bounds its age
// at the receiver, auth.go) or finds its queue full, and a slow receiver
// left the resync incomplete. Every one of them also counted against
// Limits.MaxInFlight, so client writes were refused with 503 meanwhile.
//
// So a node hands the driver at most a window of bulk sends per peer and
// holds the rest back, stamping each only as it leaves. The window is
// additive-increase, multiplicative-decrease on the answers: it grows by
// one each time a window's worth of sends to the peer was answered, and
// halves when one fails (an error: shed, timed out, or cut off), so the
// sends go at the pace the receiver answers them, and a receiver too slow
// for the window it reached soon gets fewer at once. A failed send is
// the caller's to send again (resyncSend, handOffPush); it waits for room
// like any other.
//
// | operation          | cost                                     |
// | ------------------ | ---------------------------------------- |
// | bulkSend           | O(1): one append when the window is full |
// | an answer          | O(1), and starts at most the sends room  |
// |                    | was made for                             |
//
// The state of a peer is dropped once nothing is held back or in flight
// to it, so the table holds only peers with sends under way.

// Bulk send limits.
const (
	// bulkWindowStart is a peer's window when its sends start: as many
	// as two batches of the production driver carry (two workers a
	// peer), so an idle receiver is kept busy from the first answer.
	bulkWindowStart = 64
	// bulkWindowMax bounds a peer's window. At a receiver that takes
	// 1,000 messages a second, a full window waits a quarter of a
	// second in the driver, well within ReplicaSkew.
	bulkWindowMax = 256
)

// bulkPeer is the flow control of the bulk sends to one peer.
type bulkPeer struct {
	window   int
	inFlight int
	// acked counts the sends answered since the window last grew.
	acked int
	// held are the sends waiting for room, oldest first; each starts
	// one send and calls its finish once with the outcome.
	held []func(finish func(ok bool))
}

// bulkSend starts send now when peer's window has room, or once answers
// to the earlier bulk sends to peer make room; send must call finish
// exactly once, with whether the peer answered.
func (n *Node) bulkSend(peer string, send func(finish func(ok bool))) {
	if n.bulk == nil {
		n.bulk = map[string]*bulkPeer{}
	}
	b := n.bulk[peer]
	if b == nil {
		b = &bulkPeer{window: bulkWindowStart}
		n.bulk[peer] = b
	}
	if b.inFlight >= b.window {
		b.held = append(b.held, send)
		return
	}
	n.startBulk(peer, b, send)
}

// startBulk starts one of b's sends.
func (n *Node) startBulk(peer string, b *bulkPeer, send func(finish func(ok bool))) {
	b.inFlight++
	finished := false
	send(func(ok bool) {
		if finished {
			panic("node: a bulk send to " + peer + " finished twice")
		}
		finished = true
		n.bulkAnswered(peer, b, ok)
	})
}

// bulkAnswered takes the outcome of one of b's sends: it moves the
// window, then starts the sends held back that now have room.
func (n *Node) bulkAnswered(peer string, b *bulkPeer, ok bool) {
	b.inFlight--
	if ok {
		if b.acked++; b.acked >= b.window {
			b.acked = 0
			b.window = min(b.window+1, bulkWindowMax)
		}
	} else {
		b.acked = 0
		b.window = max(b.window/2, 1)
	}
	for len(b.held) > 0 && b.inFlight < b.window {
		send := b.held[0]
		b.held[0] = nil
		b.held = b.held[1:]
		n.startBulk(peer, b, send)
	}
	if len(b.held) == 0 && b.inFlight == 0 && n.bulk[peer] == b {
		delete(n.bulk, peer)
	}
}
