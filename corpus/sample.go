package corpus

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
)

// Sample is a seeded subset of a corpus's documents (an Index's spec.sample): every document
// in Judged, plus each other document whose draw falls under Fraction. The draw depends on
// (Seed, document ID) alone, so every shard, run and Index with the same sample keeps the
// same documents whatever their order, and a larger Fraction keeps a superset (Bernoulli
// sampling with a hash as the coin: the kept share of unjudged documents is Fraction in
// expectation, not exactly).
type Sample struct {
	// Fraction of the unjudged documents kept, in [0, 1]; 1 keeps every document.
	Fraction float64
	Seed     int64
	// Judged IDs are always kept.
	Judged map[string]bool
}

// Keep reports whether document id is in the sample: it is judged, or the first 8 bytes of
// SHA-256(seed as 8 big-endian bytes, id), read as a big-endian uint64, are below
// Fraction x 2^64.
func (s Sample) Keep(id string) bool {
	if s.Judged[id] || s.Fraction >= 1 {
		return true
	}
	if s.Fraction <= 0 {
		return false
	}
	return float64(s.draw(id)) < s.Fraction*math.Exp2(64)
}

func (s Sample) draw(id string) uint64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(s.Seed))
	sum := sha256.Sum256(append(b[:], id...))
	return binary.BigEndian.Uint64(sum[:8])
}
