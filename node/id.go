package node

import (
	"errors"
	"fmt"
	"strconv"
)

// Unique IDs (DESIGN.md 4.2) are milliseconds since idEpochMs, the issuing
// node's instance number and a per-millisecond sequence:
//
//	| 42 bits ms since 2020-01-01 | 10 bits instance | 12 bits sequence |
//
// 42 bits of milliseconds last about 139 years; 12 bits give 4096 IDs per
// millisecond per node.
const (
	seqBits      = 12
	instanceBits = 10
	timeBits     = 64 - seqBits - instanceBits
	idEpochMs    = 1577836800000 // 2020-01-01T00:00:00Z
	maxIDMs      = 1<<timeBits - 1
)

// ErrBadID is returned for a timer ID that is not 32 hex digits.
var ErrBadID = errors.New("node: timer ID must be 32 hex digits")

// idGen issues unique IDs that never repeat and never go backwards, even
// when the clock does: a backward step reuses the last millisecond, and a
// full millisecond borrows the next one.
type idGen struct {
	instance uint64
	lastMs   int64
	seq      uint64
}

func newIDGen(instance uint32) idGen {
	return idGen{instance: uint64(instance), lastMs: -1}
}

// next returns a fresh ID for wall time nowMs.
func (g *idGen) next(nowMs int64) uint64 {
	ms := min(max(nowMs-idEpochMs, 0), maxIDMs)
	switch {
	case ms > g.lastMs:
		g.lastMs, g.seq = ms, 0
	default:
		g.seq++
		if g.seq == 1<<seqBits {
			g.lastMs, g.seq = g.lastMs+1, 0
		}
	}
	return uint64(g.lastMs)<<(instanceBits+seqBits) | g.instance<<seqBits | g.seq
}

// observe makes every later ID greater than id, so that a version issued
// here after seeing id orders after it (a hybrid logical clock).
func (g *idGen) observe(id uint64) {
	ms := int64(id >> (instanceBits + seqBits))
	if ms > g.lastMs {
		g.lastMs, g.seq = ms, 1<<seqBits-1
	}
}

// IDTime returns the wall time in Unix milliseconds an ID was issued at.
func IDTime(id uint64) int64 {
	return int64(id>>(instanceBits+seqBits)) + idEpochMs
}

// FormatWireID returns the client-facing timer ID: the unique ID and the
// replica bloom filter, 16 hex digits each (DESIGN.md 4.1).
func FormatWireID(id, bloom uint64) string {
	return fmt.Sprintf("%016x%016x", id, bloom)
}

// ParseWireID splits a client-facing timer ID into its unique ID and its
// replica bloom filter.
func ParseWireID(s string) (id, bloom uint64, err error) {
	if len(s) != 32 {
		return 0, 0, ErrBadID
	}
	id, err1 := strconv.ParseUint(s[:16], 16, 64)
	bloom, err2 := strconv.ParseUint(s[16:], 16, 64)
	if err1 != nil || err2 != nil || !isHex(s) {
		return 0, 0, ErrBadID
	}
	return id, bloom, nil
}

// isHex rejects the signs and underscores ParseUint would otherwise accept.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
