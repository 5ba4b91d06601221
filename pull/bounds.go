package pull

import (
	"strings"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/stream"
)

// Read bounds: what one partition's read must reflect of the session's
// writes, its earlier reads and basin.min_position (the session keeps
// them: positions.go).

// SeenKey names a partition of a relation by its store: a relation
// dropped and created again under the same name is another one.
type SeenKey struct {
	Store     string
	Partition int32
}

// SeenPositions is where the session's reads were served, by relation
// partition (Session.seen, ReadOptions.Seen). Reads only look it up; the session
// changes it between statements.
type SeenPositions map[SeenKey]materialize.Position

// Bounded reports whether o holds reads to a position at all.
func (o *ReadOptions) Bounded() bool {
	return o.Writes != nil || o.Seen != nil || o.MinPosition != nil
}

// BoundSource names a part of a read's position bound, for messages.
type BoundSource uint8

const (
	FromWrites BoundSource = 1 << iota
	FromReads
	FromSetting
)

// String names the parts in s ("the session's writes, with
// basin.read_your_writes on", "what the session's earlier reads of the
// partition returned, with basin.monotonic_reads on",
// "basin.min_position"), joined with "and".
func (s BoundSource) String() string {
	var names []string
	if s&FromWrites != 0 {
		names = append(names, "the session's writes, with basin.read_your_writes on")
	}
	if s&FromReads != 0 {
		names = append(names, "what the session's earlier reads of the partition returned, with basin.monotonic_reads on")
	}
	if s&FromSetting != 0 {
		names = append(names, "basin.min_position")
	}
	return pgerr.JoinAnd(names)
}

// Hint says how to read what is there instead of waiting for the parts
// in s.
func (s BoundSource) Hint() string {
	var off []string
	if s&FromWrites != 0 {
		off = append(off, "basin.read_your_writes = off")
	}
	if s&FromReads != 0 {
		off = append(off, "basin.monotonic_reads = off")
	}
	if s&FromSetting != 0 {
		off = append(off, "basin.min_position = ''")
	}
	if len(off) == 0 {
		return "SET basin.position_wait to wait longer."
	}
	return "SET basin.position_wait to wait longer, or SET " + strings.Join(off, " and ") + " to read what is there."
}

// Bound is the position one partition's read must reflect: offsets
// of source partitions, and the part of the session's bound each came
// from.
type Bound struct {
	Want materialize.Position
	// parts are the offsets each part of the bound asks of the
	// partition, for naming where an offset came from.
	parts [3]struct {
		src  BoundSource
		want materialize.Position
	}
	n int
}

// Bound returns the bound the read of partition ts of query is held
// to (see the top of the file); want is empty when there is none.
func (o *ReadOptions) Bound(query *stream.PersistentQuery, ts *stream.TaskState) *Bound {
	b := &Bound{Want: materialize.Position{}}
	add := func(src BoundSource, want materialize.Position) {
		if len(want) == 0 {
			return
		}
		b.Want.Merge(want)
		b.parts[b.n].src, b.parts[b.n].want = src, want
		b.n++
	}
	add(FromWrites, query.Needs(ts, o.Writes))
	if o.Seen != nil {
		// What was read of this very partition: all of it binds.
		seen := materialize.Position{}
		for _, src := range query.Positions() {
			topic := src.Topic
			for sp, off := range o.Seen[SeenKey{Store: query.Rel.StoreName(), Partition: ts.Partition}][topic] {
				seen.Advance(topic, sp, off)
			}
		}
		add(FromReads, seen)
	}
	add(FromSetting, query.Needs(ts, o.MinPosition))
	return b
}

// Sources names every part of the bound the partition is held to.
func (b *Bound) Sources() BoundSource {
	var s BoundSource
	for _, p := range b.parts[:b.n] {
		s |= p.src
	}
	return s
}

// From names the parts of the bound that ask for offset off (or more) of
// partition sp of topic.
func (b *Bound) From(topic string, sp int32, off int64) BoundSource {
	var s BoundSource
	for _, p := range b.parts[:b.n] {
		if p.want[topic][sp] >= off {
			s |= p.src
		}
	}
	return s
}
