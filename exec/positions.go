package exec

import (
	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/pull"
)

// Session positions: what a read must reflect.
//
// A position (materialize.Position) says how far into each source topic
// partition a state goes. A session keeps two:
//
//   - writes, the end of every record its INSERTs produced (the offset
//     after each). SHOW basin.last_write_position shows it as a token,
//     and INSERT ... RETURNING _position returns the part one statement
//     added. With basin.read_your_writes on (the default) every read
//     must reflect it.
//   - seen, the position each partition of each relation was served at
//     by the session's reads (PartitionRead.Position, the _position
//     pseudo-column), the merge of every read of that partition. With
//     basin.monotonic_reads on, a read of a partition must reflect what
//     the session's earlier reads of that same partition returned, so
//     that no partition goes back in time, whichever replica serves it.
//
// The read of one partition is held to the part of its writes and of
// basin.min_position that it can show (needs in pull.go), and to what
// was seen of it; it waits up to basin.position_wait for a replica that
// reflects that (pull.go). Merging positions of different relations is
// sound for writes and basin.min_position because a partition is only
// held to the source topic partitions it reads: a token of orders never
// delays a read of customers, and a view over orders waits for the
// writes to orders.
//
// What was seen is kept per relation partition, not merged into one
// position, because one partition cannot show what another one saw. A
// partition of a re-keyed view reflects every source partition, each at
// its own pace; a read of partition 3 held to the most that any
// partition (of this view, or of another relation over the same source)
// had seen of each source partition would wait for offsets partition 3
// may not reach for seconds: after its active dies, its standby has
// exactly what the active committed, and nothing more arrives until a
// new active runs. Held to what was read of partition 3 itself, the
// standby serves at once.
//
// Both only grow. They are not reset by RESET or DISCARD ALL: they are
// facts about what the session did, not settings.

// positionColumns are the result columns of INSERT ... RETURNING
// _position.
var positionColumns = []catalog.Column{{Name: "_position", Type: catalog.Varchar}}

// noteWrites records the position of records one INSERT produced.
func (s *Session) noteWrites(p materialize.Position) {
	if s.writes == nil {
		s.writes = materialize.Position{}
	}
	s.writes.Merge(p)
	// The setting is kept in step so that SHOW, SHOW ALL,
	// current_setting() and pg_settings all read it as a setting.
	s.setVar("basin.last_write_position", s.writes.String())
}

// noteReads records the positions rel's partitions were served at. A
// token that does not parse (a peer of another version) is skipped: it
// can only make the session less strict, never wrong.
func (s *Session) noteReads(rel *catalog.Relation, reads []pull.PartitionRead) {
	for _, r := range reads {
		read := rel
		if r.Rel != nil {
			read = r.Rel
		}
		if r.Position == "" || read == nil {
			continue
		}
		store := read.StoreName()
		p := r.Parsed
		if p == nil {
			var err error
			if p, err = materialize.ParsePosition(r.Position); err != nil {
				continue
			}
		}
		if s.seen == nil {
			s.seen = pull.SeenPositions{}
		}
		k := pull.SeenKey{Store: store, Partition: r.Partition}
		had := s.seen[k]
		if had == nil {
			// Never the read's own: a local read's position is the
			// task's published one.
			had = materialize.Position{}
			s.seen[k] = had
		}
		had.Merge(p)
	}
}

// fillBound sets the position bound of a statement's reads: the
// session's writes with basin.read_your_writes on, what its reads saw
// with basin.monotonic_reads on, and basin.min_position; each nil when
// it bounds nothing. opts' are copies, or (Seen) only read while the
// statement runs.
func (s *Session) fillBound(opts *pull.ReadOptions, d *derived) {
	opts.Writes, opts.Seen, opts.MinPosition, opts.Monotonic = nil, nil, nil, d.monotonicReads
	if d.readYourWrites && len(s.writes) > 0 {
		opts.Writes = s.writes.Clone()
	}
	if d.monotonicReads && len(s.seen) > 0 {
		opts.Seen = s.seen
	}
	if d.minPosition != nil {
		opts.MinPosition = d.minPosition.Clone()
	}
}

// showLastWritePosition runs SHOW basin.last_write_position: one row,
// the token of the session's writes (empty before the first). Like SHOW
// basin.last_read it is a report, so its column is named for what it
// holds; current_setting() and SHOW ALL read the same value as a
// setting.
func (s *Session) showLastWritePosition(w ResultWriter) error {
	if err := w.Columns([]catalog.Column{{Name: "last_write_position", Type: catalog.Varchar}}); err != nil {
		return err
	}
	if err := w.Row([]any{s.vars["basin.last_write_position"]}); err != nil {
		return err
	}
	return w.Complete("SHOW")
}
