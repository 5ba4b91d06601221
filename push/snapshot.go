package push

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/stream"
)

// snapshot is what remains to return of a view's rows at the offsets a
// subscription starts its changes from: per partition, a local store's
// rows (as a Pebble snapshot has them) or the changelog folded by key.
type snapshot struct {
	s     *Subscription
	db    *materialize.Snapshot
	at    time.Time
	atv   any     // at as a row's value
	parts []int32 // partitions not yet begun, in order
	// The partition being returned: an iterator of its store, or the
	// rows of its folded changelog, by key.
	it     *materialize.Iter
	folded []foldedRow
	// fold holds the ends of the partitions read from the changelog.
	fold map[int32]int64
}

type foldedRow struct {
	key []byte
	row catalog.Row
}

// takeSnapshot takes the snapshot of s, whose changelog's ends are ends,
// and sets the offsets s's changes start at.
func takeSnapshot(s *Subscription, ends map[int32]int64) (*snapshot, error) {
	db, err := s.rt.DB().NewSnapshot()
	if err != nil {
		return nil, err
	}
	sn := &snapshot{s: s, db: db, at: time.Now(), fold: map[int32]int64{}}
	sn.atv = timeValue(sn.at)
	name := s.rel.StoreName()
	for _, p := range sortedPartitions(ends) {
		cp, err := db.Store(materialize.StoreID{View: name, Partition: p}).Checkpoint()
		if err != nil {
			_ = db.Close()
			return nil, err
		}
		s.pos[s.topic][p] = cp.ChangelogOffset
		if cp.ChangelogOffset == 0 && ends[p] > 0 {
			// No replica here: the changelog up to its end now.
			sn.fold[p] = ends[p]
			s.pos[s.topic][p] = ends[p]
		}
		sn.parts = append(sn.parts, p)
	}
	return sn, nil
}

// snapshotRows adds up to about n of the snapshot's rows to s.out; at its
// end it starts the changes.
func (s *Subscription) snapshotRows(n int) error {
	sn := s.snap
	for len(s.out) < n {
		switch {
		case sn.it != nil:
			if !sn.it.Valid() {
				err := sn.it.Close()
				sn.it = nil
				if err != nil {
					return err
				}
				continue
			}
			present, row, _, err := stream.DecodeStored(sn.it.Value(), s.ncols)
			if err != nil {
				return fmt.Errorf("reading the snapshot of %s: %w", s.rel.Name, err)
			}
			if present {
				if err := s.change(sn.it.Key(), stream.OpInsert, row[:s.ncols:s.ncols], sn.at, sn.atv); err != nil {
					return err
				}
			}
			sn.it.Next()
		case len(sn.folded) > 0:
			r := sn.folded[0]
			sn.folded = sn.folded[1:]
			if err := s.change(r.key, stream.OpInsert, r.row, sn.at, sn.atv); err != nil {
				return err
			}
		case len(sn.parts) > 0:
			p := sn.parts[0]
			sn.parts = sn.parts[1:]
			if end, ok := sn.fold[p]; ok {
				rows, err := s.foldChangelog(p, end)
				if err != nil {
					return err
				}
				sn.folded = rows
				continue
			}
			it, err := sn.db.Store(materialize.StoreID{View: s.rel.StoreName(), Partition: p}).NewIter(nil, nil)
			if err != nil {
				return err
			}
			it.First()
			sn.it = it
		default:
			// The snapshot is returned: the changes follow.
			sn.close()
			s.snap = nil
			if s.opts.Progress {
				if err := s.emit(nil, OpProgress, sn.atv); err != nil {
					return err
				}
			}
			return s.follow()
		}
	}
	return nil
}

// foldChangelog reads partition p of the changelog up to end and returns
// the last row of each key, in key order.
func (s *Subscription) foldChangelog(p int32, end int64) ([]foldedRow, error) {
	rows := map[string]catalog.Row{}
	err := s.readChangelog(p, end, func(r *kgo.Record, c stream.Change) error {
		switch {
		case c.Op == stream.OpNone:
		case c.Row == nil:
			delete(rows, string(r.Key))
		default:
			rows[string(r.Key)] = c.Row
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]foldedRow, 0, len(rows))
	for k, row := range rows {
		out = append(out, foldedRow{key: []byte(k), row: row})
	}
	slices.SortFunc(out, func(a, b foldedRow) int { return bytes.Compare(a.key, b.key) })
	return out, nil
}

// matchedAt fills s.matched, for a subscription with a WHERE that
// continues AS OF a position, with the keys whose rows at that position
// matched it: the client has those rows, so a change of one of them is
// an update or a delete. It reads the changelog from its start to the
// position.
func (s *Subscription) matchedAt() error {
	for _, p := range sortedPartitions(s.pos[s.topic]) {
		end := s.pos[s.topic][p]
		if end == 0 {
			continue
		}
		err := s.readChangelog(p, end, func(r *kgo.Record, c stream.Change) error {
			if c.Marker != nil {
				return nil
			}
			if c.Row == nil || c.Op == stream.OpNone {
				// Deleted, or a group hidden by HAVING: not a row.
				delete(s.matched, string(r.Key))
				return nil
			}
			ok, err := s.opts.Where(append(c.Row[:s.ncols:s.ncols], r.Timestamp.UnixMilli()))
			if err != nil {
				return err
			}
			if ok {
				s.matched[string(r.Key)] = true
			} else {
				delete(s.matched, string(r.Key))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// readChangelog calls fn with each record of partition p of the
// changelog before offset end but control records, decoded.
func (s *Subscription) readChangelog(p int32, end int64, fn func(r *kgo.Record, c stream.Change) error) error {
	cl, err := s.rt.Consumer(fmt.Sprintf("subscribe-snapshot-%s-%d", s.rel.Name, p),
		map[string]map[int32]kgo.Offset{s.topic: {p: kgo.NewOffset().At(0)}})
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for next := int64(0); next < end; {
		fetches := cl.PollFetches(ctx)
		if err := stream.FetchErr(fetches); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading %s/%d: %w", s.topic, p, err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end || err != nil {
				return
			}
			next = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			var c stream.Change
			if c, err = stream.DecodeChange(r, s.ncols); err == nil {
				err = fn(r, c)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (sn *snapshot) close() {
	if sn.it != nil {
		_ = sn.it.Close()
		sn.it = nil
	}
	if sn.db != nil {
		_ = sn.db.Close()
		sn.db = nil
	}
}
