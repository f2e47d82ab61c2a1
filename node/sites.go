package node

import (
	"slices"
	"strconv"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// placeFromSite writes a timer another site forwarded to this site's
// replicas, keeping its version, start and sequence.
func (n *Node) placeFromSite(id uint64, spec wire.Timer, r *wire.Replication, reply func(Response)) {
	now := n.nowMs()
	spec.ReplicationFactor = max(spec.ReplicationFactor, 1)
	t := n.received(id, spec, r, now+r.StartTimeDelta.Milliseconds(), n.placement(r.Replicas, r.Sites), n.ring.ViewID())
	if held := n.store.Get(id); refutes(held, t) {
		// This node holds a newer record than the one forwarded: a
		// delete or an update it took or proxied, its tombstone kept
		// while a replica may lack it. The forwarded record is stale, and
		// it places it on nobody: passed on, it was taken live by a
		// replica here that held nothing newer any more (its tombstone
		// of the update had expired), and the repair that followed the
		// answer was lost to an overloaded link, so that replica popped
		// the replaced definition (fresh seed 9713084, scenarios/
		// README.md N79). It answers with its own record, which repairs
		// the stale sender, and spreads it to this site's replicas.
		n.hit(probeSiteRelayRefutes)
		a := n.notApplied(applied{newer: held})
		n.repairSite(t, a, n.self)
		reply(a)
		return
	}
	// A replica holding a newer record answers 409 with it. The newest
	// goes back to the forwarding site (see siteAnswered), even when
	// another replica here took the stale record, and to the replicas here
	// (see repairSite): the sender, a replica that missed a delete or an
	// update and popped, and the replicas here that took its stale notice
	// are all repaired by it.
	var newer *Response
	var newest uint64
	var from string
	// earliest is the earliest start of t's definition this site holds,
	// from its replicas' answers: a replica here may have had the
	// definition longer than the forward took to come. The answer hands
	// it back, as a replica answers a notice of its own site
	// (startAnswered), so that a site whose start a held write made late
	// converges on the other's.
	earliest := t.Start
	w := &write{reply: func(resp Response) {
		switch {
		case newer != nil:
			resp = *newer
			n.repairSite(t, *newer, from)
		case earliest < t.Start && resp.Status/100 == 2:
			resp.Header[HeaderStartDelta] = strconv.FormatInt(earliest-n.nowMs(), 10)
			n.hit(probeSiteStartDelta)
		case resp.Status == 503 && t.State != Live:
			n.hit(probeSiteDeleteUnsure)
		}
		reply(resp)
	}, quorum: 1, ok: text(200, "OK"), deletes: t.State != Live, n: n, rec: *t}
	doneFrom := func(peer string) func(bool, Response) {
		return func(ok bool, resp Response) {
			// A forwarded tombstone is answered as a delete is
			// (docs/design.md 4.5): one that buried nothing here stands
			// for the site only when every node it was sent to answered;
			// otherwise 503, and the forwarding node keeps its own
			// tombstone while this site may lack it (lackingTombstone).
			w.buried = w.buried || ok && resp.Header.Get(HeaderHeld) == heldBuried
			if peer != n.self && resp.Status == 0 {
				w.unanswered++
			}
			if delta, err := strconv.ParseInt(resp.Header.Get(HeaderStartDelta), 10, 64); err == nil {
				earliest = min(earliest, n.startMs()+delta)
			}
			if !ok && resp.Status == 409 && resp.Header.Get(HeaderCollision) == "" && len(resp.Body) > 0 {
				if v, err := strconv.ParseUint(resp.Header.Get(HeaderVersion), 10, 64); err == nil && v > newest {
					newer, newest, from = &resp, v, peer
					n.hit(probeSiteNewer)
				}
			}
			w.done(ok, resp)
		}
	}
	// Older copies at this site hear of it as a local write's would
	// (alsoHolders), but only the site's replicas count for its answer.
	targets := n.alsoHolders(t, r.Replicas)
	w.pending = len(targets)
	for _, peer := range targets {
		counts := slices.Contains(r.Replicas, peer)
		if peer == n.self {
			local := *t
			a := n.apply(&local)
			w.buried = w.buried || a.buriedLive
			if held := n.store.Get(id); held != nil && held.Version == t.Version && held.def == t.def {
				earliest = min(earliest, held.Start)
			}
			doneFrom(peer)(counts && a.ok && !a.collision && a.newer == nil, n.notApplied(a))
			continue
		}
		n.replicate(peer, t, nil, now, func(ok bool, resp Response) {
			ok = ok && vouches(t, resp)
			// The relay marks its site's replicas its placement could
			// not reach as a write's proxy does (write.lacking,
			// tellLacking): the end of the definition (an update's
			// last pop) must stay while one of them may hold an older
			// one (TestUpdatesEndStaysWhileAReplicaOfTheRelaysSiteMayLackIt).
			if i := slices.Index(t.Placement().Replicas, peer); i >= 0 && i < 32 {
				switch {
				case ok:
					w.vouched |= 1 << i
				case resp.Status != 409:
					w.lacking |= 1 << i
				}
			}
			doneFrom(peer)(counts && ok, resp)
		})
	}
}

// refutes reports whether held, the record this node holds of a timer,
// is a newer definition than t, a record of it another site forwarded:
// a later version, of the same timer, not a copy kept as moved away
// (which stands for no definition of its own).
func refutes(held, t *Timer) bool {
	return held != nil && held.State != Moved && held.Version > t.Version && !collides(held, t)
}

// repairSite passes the newer record a replica here (from) answered a
// forwarded record t with to this node and this site's other replicas of
// t, which may have taken t.
func (n *Node) repairSite(t *Timer, answer Response, from string) {
	rec, ok := n.answeredRecord(t.ID, answer)
	if !ok {
		return
	}
	if from != n.self && slices.Contains(t.Placement().Replicas, n.self) {
		local := *rec
		n.apply(&local)
	}
	n.spreadRepair(rec, t, from)
}

// forwardToSites sends t to every other site it is replicated to, for that
// site to place on its own replicas. Remote sites are not waited for: a
// client write is acknowledged by its local replicas.
func (n *Node) forwardToSites(t *Timer) {
	for _, site := range n.cfg.RemoteSites {
		if slices.Contains(t.Placement().Sites, site.Name) {
			n.forwardToSite(site, t, 1)
		}
	}
}

// remoteSitesOf marks, by position in p.Sites, the other sites this node
// forwards a record placed by p to (forwardToSites).
func (n *Node) remoteSitesOf(p *Placement) uint32 {
	var mask uint32
	for i, site := range p.Sites {
		if i < 32 && site != n.cfg.LocalSite && slices.ContainsFunc(n.cfg.RemoteSites, func(r Site) bool { return r.Name == site }) {
			mask |= 1 << i
		}
	}
	return mask
}

// siteRetry is how often a forward to another site is sent again while
// that site gives no answer (or a 5xx): a forward is the only way a
// site hears of a write, and a site that missed a delete pops the
// timer until its notice meets a tombstone at a site that took it, which
// may have expired by then (a tombstone that buried nothing lives only
// MaxMessageAge and the skew).
var siteRetry = retryPolicy{attempts: 6, base: time.Second, max: 8 * time.Second}

// forwardToSite sends t to site, and again after a wait while the site
// does not answer, then as the record this node holds of that version,
// with the progress it has made since (sent as it was, a forward that
// reached the other site late made it pop again what was popped here);
// not once this node holds a newer version (that write forwards itself)
// or none (its replicas' pop notices reach the other site).
func (n *Node) forwardToSite(site Site, t *Timer, attempt int) {
	fwd := *t
	fwd.setPlacement(&Placement{Sites: t.Placement().Sites, View: t.ViewID()})
	n.stats.ReplicationsSent++
	req := n.internalPut(site.Address, t.ID, 0, EncodeReplication(&fwd, n.nowMs()))
	n.send(req, n.cfg.ReplicationTimeout, func(resp Response, err error) {
		n.countReplication(resp, err)
		if err == nil && resp.Status/100 != 5 {
			n.markSiteLacking(t, site.Name, false)
			if resp.Status/100 == 2 {
				n.markSiteHeard(t, site.Name)
			}
			n.startAnswered(t, resp)
			n.poppedAnswered(t, resp)
			n.siteAnswered(t.ID, resp)
			return
		}
		n.markSiteLacking(t, site.Name, true)
		if attempt == 1 {
			n.tellSitesLacking(t, site.Name)
		}
		wait, ok := siteRetry.again(attempt, &n.rand)
		if !ok {
			n.hit(probeSiteGiveUp)
			return
		}
		n.clock.AfterFunc(wait, func() {
			held := n.store.Get(t.ID)
			if held == nil || held.Version != t.Version {
				return
			}
			n.hit(probeSiteAgain)
			n.forwardToSite(site, held, attempt+1)
		})
	})
}

// tellSitesLacking tells the other replicas at this site of t, a
// tombstone this node holds marked as may be lacking at site (a delete it
// proxied, whose forward there failed), that the site may lack it
// (reliability.sites-lacking): they keep theirs while it is marked too
// (lackingTombstone). The other site's notices come to its relay here,
// which places them on the timer's replicas; a node that is neither
// would be the only one to keep the tombstone, and the replicas, theirs
// ended, took the deleted definition back from the first stale notice
// (TestDeleteThroughANonRelayStaysWhereTheOtherSitesNoticesArrive).
func (n *Node) tellSitesLacking(t *Timer, site string) {
	held := n.store.Get(t.ID)
	if held == nil || held.State != Tombstone || held.Version != t.Version {
		return
	}
	if i := slices.Index(held.Placement().Sites, site); i < 0 || i >= 32 || held.sitesLacking()&(1<<i) == 0 {
		return
	}
	n.hit(probeTombstoneSiteTold)
	told := *held
	told.setViewID(n.ring.ViewID()) // held records are placed under this node's view (place.go)
	now := n.nowMs()
	body := encodeSitesLacking(&told, now)
	for _, peer := range told.Placement().Replicas {
		if peer != n.self {
			n.replicate(peer, &told, body, now, nil)
		}
	}
}

// markSiteHeard notes that site took a forward of t's definition, on
// the record this node holds live of it (Timer.heard).
func (n *Node) markSiteHeard(t *Timer, site string) {
	if held := n.heldLive(t); held != nil {
		held.markSiteHeardAt(slices.Index(held.Placement().Sites, site))
	}
}

// markSiteLacking notes whether site may lack t's definition, which this
// node holds live (TimerExtra.SitesLacking): its forward there went
// unanswered (lacking), or the site answered one, which clears the mark
// on the definition's tombstone too (a delete's: see lackingTombstone).
func (n *Node) markSiteLacking(t *Timer, site string, lacking bool) {
	held := n.markAt(t, func(p *Placement) int { return slices.Index(p.Sites, site) }, lacking, true,
		func(e *TimerExtra) *uint32 { return &e.SitesLacking })
	if held != nil {
		n.changedInPlace(held) // kept on disk with the record
	}
}

// siteAnswered learns from another site's answer to a forward: a 409 with
// a newer record (a delete or update this site missed, its forward lost)
// is placed on this site's replicas, as a 409 to a pop notice repairs the
// replicas of one site. Without it a site that missed a delete popped the
// timer until its repeat-for ended.
func (n *Node) siteAnswered(id uint64, resp Response) {
	if resp.Status != 409 || resp.Header.Get(HeaderCollision) != "" {
		return
	}
	spec, repl, err := wire.Parse(resp.Body)
	if err != nil || repl == nil || n.aheadOfClock(repl.Version) {
		return
	}
	// The newer record's replication factor places it: what this node
	// holds may be a tombstone of a delete whose factor was inferred.
	held := n.store.Get(id)
	rf := spec.ReplicationFactor
	if rf < 1 && held != nil {
		rf = int(held.RF)
	}
	rf = max(rf, 1)
	here := n.placement(n.ring.Replicas(id, rf), repl.Sites)
	t := n.received(id, spec, repl, n.startOf(repl), here, n.ring.ViewID())
	if !slices.Contains(here.Replicas, n.self) {
		n.hit(probeSiteNotReplica)
		n.spreadRepair(t, t, n.self)
		return
	}
	n.apply(t)
	if now := n.store.Get(id); now != nil && now != held {
		n.hit(probeSiteAnswered)
		n.spreadRepair(now, now, n.self)
	}
}
