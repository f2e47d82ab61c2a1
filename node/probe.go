package node

import "slices"

// Coverage probes, after FoundationDB's CODE_PROBE. A probe names a branch
// of the node that decides something rare: a conflict case of the merge,
// a step of resync or repair, a special case of membership. The node
// counts how often it passes each one; the simulator sums the counts over
// a sweep, prints the probes no seed reached, and its CI sweep fails on
// one, so that the workload is made to reach a rare branch instead of the
// branch going untested (docs/simulator.md).
//
// Adding a probe is one line in the registry below and one call, n.hit,
// on the branch. A probe never changes what the node does.

// probeID is the index of a probe in the registry.
type probeID int

// probeNames is the registry: every probe's name, in declaration order.
// The package's variable declarations fill it once, at initialization;
// nothing changes it after.
var probeNames []string

// probe declares a probe named name: a path of words that says where it
// sits and what it decides ("apply/moved-back").
func probe(name string) probeID {
	if slices.Contains(probeNames, name) {
		panic("node: probe " + name + " declared twice")
	}
	probeNames = append(probeNames, name)
	return probeID(len(probeNames) - 1)
}

// The probes, by the file that holds their branch.
var (
	// apply.go: the conflict rule and how a replica applies a record.
	probeApplyMovedAway       = probe("apply/moved-away")
	probeApplyStaleNotice     = probe("apply/stale-notice-entombed")
	probeApplyFromFuture      = probe("apply/progress-from-the-future")
	probeApplyExpiredEarly    = probe("apply/expired-tombstone-early")
	probeApplyCollision       = probe("apply/collision")
	probeApplyDeleteTiming    = probe("apply/delete-takes-buried-timing")
	probeApplyOutlive         = probe("apply/tombstone-outlives-stale")
	probeApplyOlderVersion    = probe("apply/older-version-answered-newer")
	probeApplyOlderReplaced   = probe("apply/older-version-remembered")
	probeApplyOlderCarried    = probe("apply/older-version-carried")
	probeApplyFull            = probe("apply/full")
	probeMovedBack            = probe("apply/moved-back")
	probeMovedBackSeq         = probe("apply/moved-back-keeps-pops")
	probeMovedLearns          = probe("apply/moved-copy-learns-pops")
	probeKeepProgressCarry    = probe("progress/retry-carries-pops")
	probeCarriedTold          = probe("progress/carried-pops-told")
	probeKeepProgressReplace  = probe("progress/replaced-remembered")
	probeKeepProgressPass     = probe("progress/replaced-passed-on")
	probeKeepProgressOwedOnce = probe("progress/retry-ahead-owes-once")
	probeKeepProgressBehind   = probe("progress/retry-behind-owes-once")
	// A retry known as its write's try by the first try it names alone:
	// neither its start nor its version's date was within the retry
	// window (sameWrite).
	probeSameWriteByName   = probe("progress/same-write-by-first-try")
	probeEarliestStart     = probe("start/earliest-taken")
	probeMergeAhead        = probe("marks/incoming-ahead")
	probeMergeTrim         = probe("marks/held-trimmed")
	probeOwedTrim          = probe("marks/owed-trimmed")
	probeReplicaAhead      = probe("replica/version-too-far-ahead")
	probeReplicaFromSite   = probe("replica/placed-from-site")
	probeReplicaStartDelta = probe("replica/answers-earlier-start")
	probeReplicaPushStart  = probe("replica/pushes-earlier-start")
	probeReplicaPopped     = probe("replica/answers-popped")
	// A replica without a copy took one from a message dated longer ago
	// than MaxClockSkew (late or replayed): its start is late by the age.
	probeCopyFromAgedMessage = probe("replica/copy-from-aged-message")

	// write.go: client writes on the proxy.
	probeWriteRetryNewer     = probe("write/retried-above-newer")
	probeRetryLearnsFactor   = probe("write/retry-learns-the-factor-again")
	probeWriteRFChange       = probe("write/rf-change-refused")
	probeLearnRF             = probe("rf/learned-from-copies")
	probeRecreateDefaultRF   = probe("rf/recreate-takes-default")
	probeUpdateInferredRF    = probe("rf/update-inferred")
	probeBareIDUpdate        = probe("rf/update-bare-id")
	probeBareIDDelete        = probe("rf/delete-bare-id")
	probeLearnRFUnknown      = probe("rf/unknown-no-answer")
	probeLearnRFCopy         = probe("rf/from-live-copy")
	probeLearnRFDefault      = probe("rf/default-no-copy")
	probeLearnRFPastViews    = probe("rf/asks-past-views-replicas")
	probeLackingTombKnown    = probe("tombstone/mark-of-a-holder-not-learnt")
	probeReadFollowsMoved    = probe("read/follows-moved-copy")
	probeInferRFHeld         = probe("rf/inferred-from-held")
	probeInferRFBloom        = probe("rf/inferred-from-bloom")
	probeDeleteEveryMember   = probe("rf/delete-to-every-member")
	probeWriteOldReplicas    = probe("write/to-old-replicas")
	probeWriteDefaults       = probe("write/to-default-replicas")
	probeWriteNotHeld        = probe("write/peer-holds-elsewhere")
	probeWriteHeldFactor     = probe("write/to-held-factors-replicas")
	probeWritePastViews      = probe("write/to-past-views-replicas")
	probeClockBehindIDs      = probe("write/clock-behind-ids")
	probeWriteBelowNewer     = probe("write/below-newer-not-acknowledged")
	probeReplaceOwnCopy      = probe("write/replaces-own-copy")
	probeRewriteCollision    = probe("write/collision-fresh-id")
	probeWithdrawAgain       = probe("write/withdraw-again")
	probeStartAnswered       = probe("start/answered-earlier")
	probeNamedLeaving        = probe("bloom/names-leaving-node")
	probeAccountsForDeparted = probe("bloom/names-departed-replica")

	// pop.go: pops, notices and the repair of stale replicas.
	probeSkewRefused                = probe("pop/rank-skips-refusing")
	probePopLastHolder              = probe("pop/later-replicas-may-lack-it")
	probeLackingMarked              = probe("write/replica-may-lack-it")
	probeHolderHeard                = probe("write/replica-heard-holding-it")
	probeLackingCleared             = probe("write/replica-holds-it-again")
	probeLackingNotHeld             = probe("write/replica-answered-without-holding-it")
	probeLackingTold                = probe("write/replicas-told-who-may-lack-it")
	probeLackingDeleteTold          = probe("write/replicas-told-who-may-lack-a-delete")
	probeLackingTombLearnt          = probe("tombstone/replica-lacking-learnt")
	probeLackingLearnt              = probe("apply/learnt-who-may-lack-it")
	probeLackingInherited           = probe("apply/newer-version-keeps-who-may-lack-it")
	probeLackingRepopulating        = probe("resync/repopulating-replica-may-lack-it")
	probeRepopulatingToldTombstones = probe("resync/repopulating-replica-pushed-its-tombstones")
	probeLackingTombstoneKept       = probe("tombstone/kept-while-a-replica-may-lack-it")
	probeLackingDeleteMarked        = probe("write/delete-replica-may-lack-it")
	probeTombstoneUnanswered        = probe("tombstone/replica-unanswered")
	probeAlarmMissedEnds            = probe("pop/missed-record-ends")
	probePopOwed                    = probe("pop/owed-pop")
	probeCallbackFailed             = probe("pop/callback-failed")
	probePopLastReplica             = probe("pop/last-replica-waits")
	probeNoticeTombstone            = probe("notice/final-tombstone")
	probeNoticeCollision            = probe("notice/collision")
	probeNoticeNewer                = probe("notice/newer-applied")
	probeNoticeRepair               = probe("notice/repair-spread")
	probeNoticePopped               = probe("notice/popped-learnt")
	probeNoticePoppedBehind         = probe("notice/popped-learnt-behind")
	probeRefusingMarked             = probe("notice/refusing-marked")
	probeRefusingCleared            = probe("notice/refusing-cleared")

	// sites.go: other sites.
	probeSiteNewer             = probe("site/relay-answers-newer")
	probeSiteAnswered          = probe("site/newer-placed")
	probeSiteNotReplica        = probe("site/newer-passed-on")
	probeSiteAgain             = probe("site/forward-again")
	probeSiteGiveUp            = probe("site/forward-given-up")
	probeSiteStartDelta        = probe("site/relay-answers-earlier-start")
	probeSiteRelayRefutes      = probe("site/relay-refutes-from-its-own-copy")
	probeSiteDeleteUnsure      = probe("site/relay-delete-not-vouched")
	probeTombstoneSiteKept     = probe("tombstone/kept-while-a-site-may-lack-it")
	probeTombstoneSiteTold     = probe("site/tells-replicas-a-site-may-lack-it")
	probeTombstoneSiteLearnt   = probe("tombstone/site-lacking-learnt")
	probeTombstoneKeepsLacking = probe("tombstone/end-keeps-who-may-lack-it")

	// resync.go, resyncserve.go: active rebalancing.
	probeResyncNotMember     = probe("resync/page-requester-not-member")
	probeResyncOtherView     = probe("resync/page-other-view")
	probeResyncPageFull      = probe("resync/page-continues")
	probeResyncPageAhead     = probe("resync/page-asked-ahead")
	probeResyncPassedOnce    = probe("resync/passed-on-once")
	probeResyncPlacedAlike   = probe("resync/page-passes-over-unmoved")
	probeResyncOffersLacking = probe("resync/page-offers-placed-to-replica-lacking-it")
	probeReferenceMoved      = probe("resync/reference-moves-away")
	probeReferenceOlder      = probe("resync/reference-older-than-held")
	probeResyncKeepsRepop    = probe("resync/restart-keeps-repopulate")
	probeResyncLeaving       = probe("resync/leaving-fetches-nothing")
	probeResyncPageRetry     = probe("resync/page-asked-again")
	probeResyncSuperseded    = probe("resync/page-of-ended-run")
	probeResyncGiveUp        = probe("resync/peer-given-up")
	probeResyncSpreadNewer   = probe("resync/newer-passed-on")
	probeResyncReplicate     = probe("resync/replicated")
	probeResyncTombstone     = probe("resync/rebalancing-tombstone")
	probeResyncWithheld      = probe("resync/reference-withheld")
	probeResyncSendAgain     = probe("resync/send-again")
	probeResyncSendFailed    = probe("resync/send-failed")
	probeResyncRefsAgain     = probe("resync/references-again")
	probeResyncRefused       = probe("resync/refused-at-limit")
	probePushAgainHeldAway   = probe("resync/pushed-again-once-kept-away")

	// repair.go: replicas compared and repaired.
	probeRepairQuiet            = probe("repair/quiet-round-skipped")
	probeRepairPush             = probe("repair/pushed-newer")
	probeRepairLacking          = probe("repair/pushed-what-the-peer-may-lack")
	probeRepairLackingCap       = probe("repair/marked-pushes-capped")
	probeRepairWant             = probe("repair/asked-for-newer")
	probeRepairGive             = probe("repair/gave-what-was-asked")
	probeRepairAnsweredNewer    = probe("repair/push-answered-newer-taken")
	probeRepairPage             = probe("repair/next-page")
	probeRepairYoung            = probe("repair/young-left-out")
	probeRepairOtherView        = probe("repair/peer-on-other-view")
	probeRepairRetry            = probe("repair/asked-again")
	probeRepairGiveUp           = probe("repair/peer-given-up")
	probeRepairHeldForRoom      = probe("repair/held-for-want-of-room")
	probeRepairRoomFreed        = probe("repair/room-freed")
	probeRepairCollisionNoted   = probe("repair/collision-refusal-noted")
	probeRepairCollisionSkipped = probe("repair/collision-refused-not-sent-again")
	probeHandOffHeldForRoom     = probe("repair/hand-off-held-for-want-of-room")
	probeHandOffRoomAgain       = probe("repair/hand-off-peer-has-room-again")
	probeHandOff                = probe("repair/handed-off")
	probeHandOffDone            = probe("repair/hand-off-moved-away")
	probeHandOffTombstone       = probe("repair/hand-off-tombstone")
	probeHandOffAgain           = probe("repair/hand-off-again")
	probeHandOffHeardSkipped    = probe("repair/hand-off-skips-a-target-heard")
	probeMovedBackOwes          = probe("apply/moved-back-owes-nothing-made")

	// node.go: membership and limits.
	probeClusterRenumbered = probe("cluster/instance-renumbered")
	probeShedTimers        = probe("shed/max-timers")
	probeShedInFlight      = probe("shed/max-in-flight")
	probeForwardOtherView  = probe("replica/forwards-other-view")
	probeTellDropped       = probe("replica/tells-dropped-replicas")
	probePlacedAway        = probe("place/reload-leaves-live-copy-to-hand-off")
	probePlacedMarks       = probe("place/marks-follow-their-replicas")
	probeInstanceClash     = probe("cluster/instance-clash-detected")
	probeClashRefused      = probe("cluster/instance-clash-refuses-write")
	probeRestoredWaits     = probe("restore/late-pop-waits-for-word")
)

// hits counts the probes a pure function passed (see probeHits).
func (n *Node) hits(h *probeHits) {
	for _, p := range h.ids[:h.n] {
		n.probeHits[p]++
	}
}

// hit counts one pass through probe p.
func (n *Node) hit(p probeID) { n.probeHits[p]++ }

// hitIf counts one pass through probe p when cond holds: for a rare case
// that shares its branch with a common one. It returns cond, for a
// branch decided by a callback (sendRetried's again).
func (n *Node) hitIf(cond bool, p probeID) bool {
	if cond {
		n.probeHits[p]++
	}
	return cond
}

// ProbeNames returns the name of every coverage probe, in declaration
// order: the order of ProbeHits.
func ProbeNames() []string { return slices.Clone(probeNames) }

// ProbeHits returns how often this node passed each coverage probe, in
// the order of ProbeNames.
func (n *Node) ProbeHits() []uint64 { return slices.Clone(n.probeHits) }
