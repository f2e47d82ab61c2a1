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
// holds the rest back, stamping each only as it leaves. The window moves
// on the answers, as TCP's congestion window does: it starts at about a
// resync page's sends, grows by one with each send answered (doubling
// every round trip) until a send to the peer first fails, then by one
// each time a window's worth was answered; it halves when a send fails
// (an error: shed, timed out, or cut off), once for the sends under way
// then. So the sends go at the pace the receiver answers them, and a
// receiver too slow for the window it reached soon gets fewer at once.
// A failed send is the caller's to send again (resyncSend,
// handOffPush); it waits for room like any other.
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
	// bulkWindowStart is a peer's window when its sends start: the
	// sends of about one resync page of MaxResyncPage timers, so that a
	// receiver that keeps up never has a page wait on the window (its
	// messages then arrive before the same timers' pages from other
	// peers, which would each be taken and passed on again).
	bulkWindowStart = 1024
	// bulkWindowMax bounds a peer's window. At a receiver that takes
	// 2,000 messages a second from the sender, a full window waits two
	// seconds in the driver, its MaxWait (ReplicaSkew); a slower one
	// sheds some, and the window halves.
	bulkWindowMax = 4096
)

// bulkPeer is the flow control of the bulk sends to one peer.
type bulkPeer struct {
	window   int
	inFlight int
	// acked counts the sends answered since the window last grew;
	// failed is set once a send to the peer failed, which ends the
	// window's doubling.
	acked  int
	failed bool
	// epoch counts the window's halvings: the failures of sends started
	// before the latest one halve it no further, so that one burst of
	// failures (a stall at the receiver) halves it once, as a round
	// trip's losses halve TCP's window once.
	epoch int
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
	finished, epoch := false, b.epoch
	send(func(ok bool) {
		if finished {
			panic("node: a bulk send to " + peer + " finished twice")
		}
		finished = true
		n.bulkAnswered(peer, b, ok, epoch)
	})
}

// bulkAnswered takes the outcome of one of b's sends, started in the
// window's epoch: it moves the window, then starts the sends held back
// that now have room.
func (n *Node) bulkAnswered(peer string, b *bulkPeer, ok bool, epoch int) {
	b.inFlight--
	switch {
	case !ok && epoch == b.epoch:
		b.acked, b.failed = 0, true
		b.window = max(b.window/2, 1)
		b.epoch++
	case !ok:
	case !b.failed:
		b.window = min(b.window+1, bulkWindowMax)
	default:
		if b.acked++; b.acked >= b.window {
			b.acked = 0
			b.window = min(b.window+1, bulkWindowMax)
		}
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
