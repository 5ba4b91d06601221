package exec

import (
	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/materialize"
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
//   - seen, the merge of the position of every partition its reads were
//     served at (PartitionRead.Position, the _position pseudo-column).
//     With basin.monotonic_reads on every read must reflect it, so a
//     session never goes back in time, whichever replica serves it.
//
// Both are merged with basin.min_position into Env.MinPosition, and the
// read of a partition waits up to basin.position_wait for a replica that
// reflects it (pull.go). Merging positions of different relations is
// sound because a partition is only held to the source topic partitions
// it reads (needs in pull.go): a token of orders never delays a read of
// customers, and a view over orders waits for what a read of orders
// itself saw.
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

// noteReads records the positions a read's partitions were served at.
// A token that does not parse (a peer of another version) is skipped:
// it can only make the session less strict, never wrong.
func (s *Session) noteReads(reads []PartitionRead) {
	for _, r := range reads {
		if r.Position == "" {
			continue
		}
		p := r.pos
		if p == nil {
			var err error
			if p, err = materialize.ParsePosition(r.Position); err != nil {
				continue
			}
		}
		if s.seen == nil {
			s.seen = materialize.Position{}
		}
		s.seen.Merge(p)
	}
}

// minPosition is the position the session's next read must reflect:
// its writes (basin.read_your_writes), what it has read
// (basin.monotonic_reads) and basin.min_position; nil when none bounds
// it.
func (s *Session) minPosition() materialize.Position {
	d := s.derivedSettings()
	writes := d.readYourWrites && len(s.writes) > 0
	seen := d.monotonicReads && len(s.seen) > 0
	if !writes && !seen && d.minPosition == nil {
		return nil // the common case, without a map
	}
	bound := materialize.Position{}
	if writes {
		bound.Merge(s.writes)
	}
	if seen {
		bound.Merge(s.seen)
	}
	if d.minPosition != nil {
		bound.Merge(d.minPosition)
	}
	if len(bound) == 0 {
		return nil
	}
	return bound
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
