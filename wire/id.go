package wire

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
)

// A timer ID as the API shows it (docs/design.md 4.1) is 32 hex digits:
// the timer's 64-bit unique ID, then the bloom filter of its replicas.
// How a node lays out a unique ID is the node's (node/id.go).

// ErrBadID is returned for a timer ID that is not 32 hex digits, or a
// unique ID that is not 16.
var ErrBadID = errors.New("wire: timer ID must be 32 hex digits")

// FormatWireID returns the client-facing timer ID: the unique ID and the
// replica bloom filter, 16 hex digits each.
func FormatWireID(id, bloom uint64) string {
	var b [32]byte
	return string(AppendWireID(b[:0], id, bloom))
}

// AppendWireID appends FormatWireID(id, bloom) to b.
func AppendWireID(b []byte, id, bloom uint64) []byte {
	var be [16]byte
	binary.BigEndian.PutUint64(be[:8], id)
	binary.BigEndian.PutUint64(be[8:], bloom)
	return hex.AppendEncode(b, be[:])
}

// FormatID returns a unique ID as 16 hex digits, as the first half of a
// wire ID shows it (and the X-Chronos-Timer header of a pop carries it).
func FormatID(id uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], id)
	return hex.EncodeToString(b[:])
}

// ParseID parses a unique ID as FormatID writes it: 16 hex digits.
func ParseID(s string) (uint64, error) {
	if len(s) != 16 || !isHex(s) {
		return 0, ErrBadID
	}
	return strconv.ParseUint(s, 16, 64)
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
