package exec

import (
	"strings"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/stream"
)

// Read bounds: what one partition's read must reflect of the session's
// writes, its earlier reads and basin.min_position (the session keeps
// them: positions.go).

// seenKey names a partition of a relation by its store: a relation
// dropped and created again under the same name is another one.
type seenKey struct {
	store     string
	partition int32
}

// seenPositions is where the session's reads were served, by relation
// partition (Session.seen, ReadOptions.Seen). Reads only look it up; the session
// changes it between statements.
type seenPositions map[seenKey]materialize.Position

// bounded reports whether o holds reads to a position at all.
func (o *ReadOptions) bounded() bool {
	return o.Writes != nil || o.Seen != nil || o.MinPosition != nil
}

// boundSource names a part of a read's position bound, for messages.
type boundSource uint8

const (
	fromWrites boundSource = 1 << iota
	fromReads
	fromSetting
)

// String names the parts in s ("the session's writes, with
// basin.read_your_writes on", "what the session's earlier reads of the
// partition returned, with basin.monotonic_reads on",
// "basin.min_position"), joined with "and".
func (s boundSource) String() string {
	var names []string
	if s&fromWrites != 0 {
		names = append(names, "the session's writes, with basin.read_your_writes on")
	}
	if s&fromReads != 0 {
		names = append(names, "what the session's earlier reads of the partition returned, with basin.monotonic_reads on")
	}
	if s&fromSetting != 0 {
		names = append(names, "basin.min_position")
	}
	return pgerr.JoinAnd(names)
}

// hint says how to read what is there instead of waiting for the parts
// in s.
func (s boundSource) hint() string {
	var off []string
	if s&fromWrites != 0 {
		off = append(off, "basin.read_your_writes = off")
	}
	if s&fromReads != 0 {
		off = append(off, "basin.monotonic_reads = off")
	}
	if s&fromSetting != 0 {
		off = append(off, "basin.min_position = ''")
	}
	if len(off) == 0 {
		return "SET basin.position_wait to wait longer."
	}
	return "SET basin.position_wait to wait longer, or SET " + strings.Join(off, " and ") + " to read what is there."
}

// partBound is the position one partition's read must reflect: offsets
// of the source partitions of topic, and the part of the session's
// bound each came from.
type partBound struct {
	topic string
	want  map[int32]int64
	// parts are the offsets each part of the bound asks of the
	// partition, for naming where an offset came from.
	parts [3]struct {
		src  boundSource
		want map[int32]int64
	}
	n int
}

// readBound returns the bound the read of partition ts of query is held
// to (see the top of the file); want is empty when there is none.
func (o *ReadOptions) readBound(query *stream.PersistentQuery, ts *stream.TaskState) *partBound {
	b := &partBound{want: map[int32]int64{}}
	add := func(src boundSource, topic string, want map[int32]int64) {
		if len(want) == 0 {
			return
		}
		for sp, off := range want {
			b.want[sp] = max(b.want[sp], off)
		}
		b.parts[b.n].src, b.parts[b.n].want = src, want
		b.n++
	}
	topic, writes := query.Needs(ts, o.Writes)
	b.topic = topic
	add(fromWrites, topic, writes)
	if o.Seen != nil {
		add(fromReads, topic, o.Seen[seenKey{store: query.Rel.StoreName(), partition: ts.Partition}][topic])
	}
	_, setting := query.Needs(ts, o.MinPosition)
	add(fromSetting, topic, setting)
	return b
}

// sources names every part of the bound the partition is held to.
func (b *partBound) sources() boundSource {
	var s boundSource
	for _, p := range b.parts[:b.n] {
		s |= p.src
	}
	return s
}

// from names the parts of the bound that ask for offset off (or more) of
// source partition sp.
func (b *partBound) from(sp int32, off int64) boundSource {
	var s boundSource
	for _, p := range b.parts[:b.n] {
		if p.want[sp] >= off {
			s |= p.src
		}
	}
	return s
}
