// Package expand is small-to-big retrieval: it widens a search hit to the context around it,
// its neighbouring chunks or its heading section, read from the same collection under the same
// access filter as the search. The query endpoint, `ragops query --expand` and the evaluator
// (Evaluation spec.expand) all expand through Context.
package expand

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ragops/ragops/vectorstore"
)

// Mode is what a hit expands to.
type Mode string

// Modes.
const (
	// None returns the hit alone.
	None Mode = ""
	// Neighbours returns the chunks of the hit's document within Spec.Size ordinals of it.
	Neighbours Mode = "neighbours"
	// Section returns the chunks of the hit's heading section: the run of consecutive chunks
	// of its document with the same heading path as the hit, at most Spec.Size of them.
	Section Mode = "section"
)

// Bounds of Spec.Size, and the section size when none is given.
const (
	MaxNeighbours  = 5
	MaxSection     = 20
	DefaultSection = 8
)

// Spec is one expansion: a Mode and its Size (Neighbours: ordinals either side, 1..MaxNeighbours;
// Section: the most chunks returned, 1..MaxSection). The zero Spec expands nothing.
type Spec struct {
	Mode Mode
	Size int
}

// Parse reads a --expand value: "neighbours:N" (N 1..MaxNeighbours), "section" (at most
// DefaultSection chunks) or "section:N" (N 1..MaxSection); "" or "none" is no expansion.
//
// Errors: any other value, or a size out of bounds.
func Parse(s string) (Spec, error) {
	name, size, hasSize := strings.Cut(strings.TrimSpace(s), ":")
	var sp Spec
	switch strings.ToLower(name) {
	case "", "none":
		if hasSize {
			return Spec{}, fmt.Errorf("expand %q: none takes no size", s)
		}
		return Spec{}, nil
	case "neighbours", "neighbors":
		if !hasSize {
			return Spec{}, fmt.Errorf("expand %q: want neighbours:N (N 1..%d)", s, MaxNeighbours)
		}
		sp.Mode = Neighbours
	case "section":
		sp.Mode, sp.Size = Section, DefaultSection
	default:
		return Spec{}, fmt.Errorf("expand %q: want neighbours:N, section or section:N", s)
	}
	if hasSize {
		n, err := strconv.Atoi(size)
		if err != nil {
			return Spec{}, fmt.Errorf("expand %q: size %q is not a number", s, size)
		}
		sp.Size = n
	}
	return sp, sp.Validate()
}

// Validate checks the size against the mode's bounds.
func (s Spec) Validate() error {
	switch s.Mode {
	case None:
		if s.Size != 0 {
			return fmt.Errorf("expand: size %d without a mode", s.Size)
		}
	case Neighbours:
		if s.Size < 1 || s.Size > MaxNeighbours {
			return fmt.Errorf("expand: neighbours %d: want 1..%d", s.Size, MaxNeighbours)
		}
	case Section:
		if s.Size < 1 || s.Size > MaxSection {
			return fmt.Errorf("expand: section of %d chunks: want 1..%d", s.Size, MaxSection)
		}
	default:
		return fmt.Errorf("expand: mode %q: want %s or %s", s.Mode, Neighbours, Section)
	}
	return nil
}

// String is the Parse form of s ("neighbours:2", "section:8"; "none").
func (s Spec) String() string {
	if s.Mode == None {
		return "none"
	}
	return fmt.Sprintf("%s:%d", s.Mode, s.Size)
}

// Context returns what hit (its DocID and Ordinal) expands to under s, in ordinal order, the
// hit's own chunk included when access lets it be read: Neighbours, the chunks of its
// document with ordinals within s.Size of it; Section, the consecutive chunks of its document
// sharing its heading path (exactly, as stored with the hit's chunk), at most s.Size of them
// centred on the hit (the section's first and last chunks bound the window). Chunks are read
// from target (a collection or an alias; use the collection that answered the search) with
// access as their filter (vectorstore.Store.Neighbours): nothing access does not allow is
// ever returned. A None spec returns nil.
//
// Errors: an invalid spec; those of vectorstore.Store.Neighbours (a filter without groups
// included).
func Context(ctx context.Context, s *vectorstore.Store, target string, hit vectorstore.Hit, sp Spec, access *vectorstore.AccessFilter) ([]vectorstore.Hit, error) {
	if err := sp.Validate(); err != nil {
		return nil, err
	}
	switch sp.Mode {
	case None:
		return nil, nil
	case Neighbours:
		return s.Neighbours(ctx, target, hit.DocID, hit.Ordinal-sp.Size, hit.Ordinal+sp.Size, access)
	}
	// A section of at most Size chunks around the hit lies within Size-1 ordinals of it.
	window, err := s.Neighbours(ctx, target, hit.DocID, hit.Ordinal-(sp.Size-1), hit.Ordinal+(sp.Size-1), access)
	if err != nil {
		return nil, err
	}
	return section(window, hit, sp.Size), nil
}

// section picks from window (one document's chunks in ordinal order) the run of consecutive
// ordinals around hit's chunk with that chunk's heading path, cut to at most size chunks
// centred on it; nil when hit's chunk is not in window.
func section(window []vectorstore.Hit, hit vectorstore.Hit, size int) []vectorstore.Hit {
	at := slices.IndexFunc(window, func(h vectorstore.Hit) bool { return h.Ordinal == hit.Ordinal })
	if at < 0 { // the hit itself is not readable: nothing around it is its section
		return nil
	}
	same := func(i, j int) bool {
		return window[i].Ordinal == window[j].Ordinal+(i-j) && slices.Equal(window[i].HeadingPath, window[j].HeadingPath)
	}
	lo, hi := at, at
	for lo > 0 && same(lo-1, at) {
		lo--
	}
	for hi < len(window)-1 && same(hi+1, at) {
		hi++
	}
	if hi-lo+1 > size {
		lo = max(lo, at-(size-1)/2)
		hi = min(hi, lo+size-1)
		lo = max(lo, hi-size+1)
	}
	return window[lo : hi+1]
}
