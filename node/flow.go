package node

// Flow control of bulk sends. A resync and a hand-off send a message for
// each timer they move, to a few peers, all at once (and a repair round
// its pushes of the tombstones marking a peer as may lack them, a page at
// most, repairLacking): a join of a node to
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
// A peer that is down or cut off answers nothing, and each failed round
// of sends halves its window: once the window is down to one send and
// bulkGiveUp sends to it in a row have failed, the sends held back for
// it are dropped at once, each told so (its drop), as is every bulk send
// made to it while sends to it are still under way. A slow peer answers
// some of each round, and never gets there. One at a time, each failing only at
// its timeout, a hand-off of a hundred thousand copies to a down node
// would take days, and each repair round would queue it again behind
// itself. Once nothing is under way the peer is forgotten, and the next
// bulk send to it (the resync's or the repair round's own retry) starts
// afresh.
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
	// bulkGiveUp is how many sends to a peer in a row may fail, its
	// window down to one, before the rest held back for it are dropped:
	// about ten timeouts to halve the window there, and eight more.
	bulkGiveUp = 8
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
	// failing counts the sends to the peer that failed since one
	// was last answered.
	failing int
	// held are the sends waiting for room, oldest first.
	held []bulkJob
}

// givenUp reports whether sends to b's peer fail whatever the window:
// at one send at a time, bulkGiveUp have failed in a row.
func (b *bulkPeer) givenUp() bool { return b.window == 1 && b.failing >= bulkGiveUp }

// bulkJob is a bulk send: send starts it and calls its finish once with
// the outcome; drop, instead, tells its caller it was given up on
// unsent.
type bulkJob struct {
	send func(finish func(ok bool))
	drop func()
}

// bulkSend starts send now when peer's window has room, or once answers
// to the earlier bulk sends to peer make room; send must call finish
// exactly once, with whether the peer answered. When the node gives up
// on the peer first (bulkGiveUp), drop is called instead of send.
func (n *Node) bulkSend(peer string, send func(finish func(ok bool)), drop func()) {
	if n.bulk == nil {
		n.bulk = map[string]*bulkPeer{}
	}
	b := n.bulk[peer]
	if b == nil {
		b = &bulkPeer{window: bulkWindowStart}
		n.bulk[peer] = b
	}
	switch {
	case b.givenUp():
		drop()
	case b.inFlight >= b.window:
		b.held = append(b.held, bulkJob{send, drop})
	default:
		n.startBulk(peer, b, send)
	}
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
	b.failing++
	if ok {
		b.failing = 0
	}
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
	if b.givenUp() && len(b.held) > 0 {
		held := b.held
		b.held = nil
		for _, j := range held {
			j.drop()
		}
	}
	for len(b.held) > 0 && b.inFlight < b.window {
		j := b.held[0]
		b.held[0] = bulkJob{}
		b.held = b.held[1:]
		n.startBulk(peer, b, j.send)
	}
	if len(b.held) == 0 && b.inFlight == 0 && n.bulk[peer] == b {
		delete(n.bulk, peer)
	}
}
