package push

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/serde"
	"github.com/basindb/basin/stream"
)

// The columns a subscription adds after the relation's.
const (
	// OpColumn says what the row is: "insert", "update" or "delete" of
	// the row of its key, or "progress" (Options.Progress).
	OpColumn = "_op"
	// TimeColumn is when the change was committed (the changelog
	// record's timestamp); for a snapshot row, when the snapshot was
	// taken.
	TimeColumn = "_ts"
	// PositionColumn is the subscription's position after the row, the
	// token AS OF continues from.
	PositionColumn = "_position"
)

// The values of OpColumn.
const (
	OpInsert   = "insert"
	OpUpdate   = "update"
	OpDelete   = "delete"
	OpProgress = "progress"
)

// Options say what a subscription returns.
type Options struct {
	// Snapshot starts with the relation's rows: a view's rows now, a
	// stream's records from its start.
	Snapshot bool
	// Progress adds a progress row (OpColumn "progress", the relation's
	// columns NULL) whenever the subscription has read further than the
	// last row it returned, without a row to say so: a marker of a
	// transaction whose changes were filtered out, or none at all.
	Progress bool
	// AsOf continues a subscription after a row whose position it is
	// (no snapshot); nil starts a new one.
	AsOf materialize.Position
	// Where keeps the rows it is true of; nil keeps every row. Project
	// makes the columns of a row (Columns); nil returns the relation's
	// visible columns. Both take the relation's columns and ROWTIME,
	// the change's time (planner.RecordInput); for a delete, the
	// columns but the key are NULL.
	Where   func(row catalog.Row) (bool, error)
	Project func(row catalog.Row) ([]any, error)
	Columns []catalog.Column
	// MaxFetchBytes bounds what one fetch holds (0: 1 MiB).
	MaxFetchBytes int32
}

// A Subscription is one client's stream of a relation's changes. Its
// methods are not safe for concurrent use.
type Subscription struct {
	feeds   *Feeds
	rt      *stream.Runtime
	rel     *catalog.Relation
	view    bool
	topic   string // the changelog, or the stream's topic
	ncols   int
	vis     []int // the relation's visible columns
	keys    []int // the key columns, in key order
	cols    []catalog.Column
	opts    Options
	decoder decoder

	// pos is the next offset of each partition not yet returned, and
	// posText its token, made when a row needs it.
	pos     materialize.Position
	posText string
	posSet  bool
	tokens  *materialize.TopicTokens
	// sent is the token of the last row returned, for Progress.
	sent string

	snap *snapshot // the snapshot's rows not yet returned; nil when done
	// The changes, once the snapshot is returned, come from the tail of
	// the relation, or from cl, a consumer of the subscription's own,
	// while the tail does not have them.
	tail  *tail
	taken []taken
	cl    *kgo.Client
	out   [][]any // rows decoded and not yet returned
	slab  []any   // the values of rows to come (emit)

	// matched holds, with a Where, the keys whose last row matched it:
	// one that stops matching is a delete for the subscriber, one that
	// starts an insert.
	matched map[string]bool

	closed bool
}

// Subscribe starts a subscription to rel, a view or a stream: it reads
// the offsets it starts at (and takes the snapshot's Pebble snapshot)
// now, and the rows as Next is called.
func (f *Feeds) Subscribe(ctx context.Context, rel *catalog.Relation, opts Options) (*Subscription, error) {
	rt := f.rt
	s := &Subscription{feeds: f, rt: rt, rel: rel, opts: opts, ncols: len(rel.Schema.Columns)}
	switch rel.Kind {
	case catalog.KindView:
		s.view, s.topic = true, rel.ChangelogTopic(f.cluster)
		s.keys = rel.Schema.KeyIndexes()
	case catalog.KindStream:
		s.topic = rel.Topic
		s.decoder.codec = serde.NewCodec(rel, rt.Registry())
	default:
		return nil, pgerr.New(pgerr.FeatureNotSupported, "cannot subscribe to %s %s: only views and streams have changes to follow", kindName(rel), rel.Name).
			WithHint("Subscribe to a view of it: CREATE TABLE v AS SELECT * FROM %s.", rel.Name)
	}
	for i, c := range rel.Schema.Columns {
		if !c.Hidden {
			s.vis = append(s.vis, i)
			s.cols = append(s.cols, c)
		}
	}
	if opts.Project != nil {
		s.cols = slices.Clone(opts.Columns)
	}
	s.cols = append(s.cols,
		catalog.Column{Name: OpColumn, Type: catalog.Varchar},
		catalog.Column{Name: TimeColumn, Type: catalog.TimestampTZ},
		catalog.Column{Name: PositionColumn, Type: catalog.Varchar})
	if opts.Where != nil {
		s.matched = map[string]bool{}
	}
	s.decoder.view, s.decoder.ncols = s.view, s.ncols
	ends, err := kafka.EndOffsets(ctx, rt.Admin(), s.topic)
	if err != nil {
		return nil, pgerr.New(pgerr.IOError, "reading the end offsets of %s: %v", s.topic, err)
	}
	if len(ends) != int(rel.Partitions) {
		return nil, pgerr.New(pgerr.ObjectNotInPrerequisiteState, "%s %s has %d partitions, and its topic %s %d", kindName(rel), rel.Name, rel.Partitions, s.topic, len(ends))
	}
	s.pos = materialize.Position{s.topic: make(map[int32]int64, len(ends))}
	s.tokens = materialize.NewTopicTokens(s.topic, slices.Collect(maps.Keys(ends)))
	switch {
	case opts.AsOf != nil:
		if err := s.resume(opts.AsOf, ends); err != nil {
			return nil, err
		}
		if s.matched != nil && s.view {
			if err := s.matchedAt(); err != nil {
				return nil, pgerr.New(pgerr.IOError, "reading the changelog of %s up to the AS OF position: %v", s.rel.Name, err)
			}
		}
	case opts.Snapshot && s.view:
		if s.snap, err = takeSnapshot(s, ends); err != nil {
			return nil, err
		}
	case opts.Snapshot:
		for p := range ends {
			s.pos[s.topic][p] = 0 // a stream's records, from its start
		}
	default:
		for p, end := range ends {
			s.pos[s.topic][p] = end
		}
	}
	if s.snap == nil {
		if err := s.follow(); err != nil {
			_ = s.Close() // leaves the tail it may have joined
			return nil, err
		}
	}
	return s, nil
}

func kindName(rel *catalog.Relation) string {
	if rel.Kind == catalog.KindView {
		return "table" // a view is a table to SQL
	}
	return string(rel.Kind)
}

// resume starts at position asOf, which must be one of the relation's.
func (s *Subscription) resume(asOf materialize.Position, ends map[int32]int64) error {
	offs, ok := asOf[s.topic]
	bad := func(why string) error {
		return pgerr.New(pgerr.InvalidParameterValue, "AS OF position is not one of %s %s: %s", kindName(s.rel), s.rel.Name, why).
			WithHint("Give the _position of a row of a subscription to %s; a view dropped and created again has a new changelog.", s.rel.Name)
	}
	if !ok || len(asOf) != 1 {
		return bad(fmt.Sprintf("it is not a position in %s", s.topic))
	}
	for p, end := range ends {
		off, ok := offs[p]
		if !ok {
			return bad(fmt.Sprintf("it has no offset of partition %d", p))
		}
		if off < 0 || off > end {
			return bad(fmt.Sprintf("offset %d of partition %d is past its end, %d", off, p, end))
		}
		s.pos[s.topic][p] = off
	}
	if len(offs) != len(ends) {
		return bad("it has partitions the topic does not")
	}
	return nil
}

// follow starts reading the changes from the subscription's position:
// from the tail of the relation when it has them, else with a consumer
// of the subscription's own.
func (s *Subscription) follow() error {
	if s.tail == nil {
		s.feeds.attach(s)
	}
	if s.tail != nil && s.tail.covers(s.pos[s.topic]) {
		return nil
	}
	offs := map[string]map[int32]kgo.Offset{s.topic: {}}
	for p, off := range s.pos[s.topic] {
		offs[s.topic][p] = kgo.NewOffset().At(off)
	}
	max := s.opts.MaxFetchBytes
	if max <= 0 {
		max = 1 << 20
	}
	cl, err := s.rt.Consumer("subscribe-"+s.rel.Name, offs,
		kgo.FetchMaxBytes(max), kgo.FetchMaxPartitionBytes(max), kgo.MaxConcurrentFetches(1))
	if err != nil {
		return err
	}
	s.cl = cl
	return nil
}

// Columns returns the subscription's columns: the relation's visible
// ones, then OpColumn, TimeColumn and PositionColumn.
func (s *Subscription) Columns() []catalog.Column { return s.cols }

// Next appends up to n rows to dst and returns it. It waits for a row
// until wait has passed (wait < 0: until n rows; 0: not at all), or ctx
// is done, which ends it with ctx's error only when it has no row. A
// subscription never ends by itself: done is always false.
func (s *Subscription) Next(ctx context.Context, dst [][]any, n int, wait time.Duration) (rows [][]any, done bool, err error) {
	// Until when to wait for a first row: forever for a wait so long it
	// overflows (the zero deadline).
	var deadline time.Time
	if start := time.Now(); wait >= 0 {
		if deadline = start.Add(wait); wait > 0 && !deadline.After(start) {
			deadline = time.Time{}
		}
	}
	for len(dst) < n {
		if len(s.out) > 0 {
			k := min(n-len(dst), len(s.out))
			dst = append(dst, s.out[:k]...)
			if k == len(s.out) {
				clear(s.out)
				s.out = s.out[:0] // its array again
			} else {
				clear(s.out[:k])
				s.out = s.out[k:]
			}
			continue
		}
		if len(dst) > 0 && wait >= 0 {
			return dst, false, nil // what there is, without waiting more
		}
		if s.snap != nil {
			if err := s.snapshotRows(n - len(dst)); err != nil {
				return dst, false, err
			}
			continue
		}
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if wait >= 0 && !deadline.IsZero() {
			if wait == 0 || !time.Now().Before(deadline) {
				return dst, false, nil
			}
			pctx, cancel = context.WithDeadline(ctx, deadline)
		}
		err := s.poll(pctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil && len(dst) == 0 {
				return dst, false, ctx.Err()
			}
			if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
				return dst, false, nil
			}
			return dst, false, err
		}
	}
	return dst, false, nil
}

// poll reads the next changes into s.out.
func (s *Subscription) poll(ctx context.Context) error {
	if s.cl == nil {
		return s.pollTail(ctx)
	}
	fetches := s.cl.PollFetches(ctx)
	if fetches.NumRecords() == 0 {
		// A poll ended by ctx may still have returned records: they are
		// taken in below, never dropped.
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	var ferr error
	fetches.EachError(func(topic string, p int32, e error) {
		if !errors.Is(e, context.Canceled) && !errors.Is(e, context.DeadlineExceeded) {
			ferr = fmt.Errorf("reading %s/%d: %w", topic, p, e)
		}
	})
	if ferr != nil {
		return ferr
	}
	var err error
	fetches.EachRecord(func(r *kgo.Record) {
		if err == nil {
			err = s.record(r)
		}
	})
	if err != nil {
		return err
	}
	if fetches.NumRecords() == 0 {
		return nil
	}
	if s.tail != nil && s.tail.covers(s.pos[s.topic]) {
		// Caught up: the tail has the changes from here.
		s.cl.Close()
		s.cl = nil
	}
	return s.progressed()
}

// progressed adds a progress row, with Options.Progress, when the
// subscription has read past the last row it returned.
func (s *Subscription) progressed() error {
	if s.opts.Progress {
		if t := s.position(); t != s.sent {
			return s.emit(nil, OpProgress, timeValue(time.Now()))
		}
	}
	return nil
}

// pollTail takes the next changes from the tail into s.out, waiting for
// them until ctx ends; it moves the subscription to a consumer of its own
// when the tail does not have them.
func (s *Subscription) pollTail(ctx context.Context) error {
	for {
		tk, more, ok := s.tail.take(s.pos[s.topic], s.taken[:0])
		s.taken = tk
		if !ok {
			return s.follow()
		}
		moved := false
		for _, t := range tk {
			for i := range t.changes {
				c := &t.changes[i]
				s.advance(t.p, c.off+1)
				if err := s.apply(c); err != nil {
					return err
				}
			}
			if t.next >= 0 {
				s.advance(t.p, t.next)
			}
			moved = true
		}
		clear(s.taken)
		if moved {
			return s.progressed()
		}
		select {
		case <-more:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// record takes in one record of the changes.
func (s *Subscription) record(r *kgo.Record) error {
	s.advance(r.Partition, r.Offset+1)
	c, ok, err := s.decoder.decode(r)
	if !ok {
		return err
	}
	return s.apply(&c)
}

// apply takes in change c: a delete's row is its key values, the other
// columns NULL.
func (s *Subscription) apply(c *change) error {
	row := c.row
	if row == nil {
		row = make(catalog.Row, s.ncols)
		for i, k := range s.keys {
			if i < len(c.keys) {
				row[k] = c.keys[i]
			}
		}
	}
	return s.change(c.key, c.op, row, c.ts, c.tsv)
}

// change returns the change op of the row of key (record key bytes) to
// row, as the subscriber sees it through Where.
func (s *Subscription) change(key []byte, op stream.Op, row catalog.Row, ts time.Time, tsv any) error {
	if s.opts.Where != nil || s.opts.Project != nil {
		row = append(row[:s.ncols:s.ncols], ts.UnixMilli()) // ROWTIME
	}
	if s.opts.Where != nil && s.view {
		was := s.matched[string(key)]
		now := false
		if op != stream.OpDelete {
			ok, err := s.opts.Where(row)
			if err != nil {
				return err
			}
			now = ok
		}
		switch {
		case now && was:
			op = stream.OpUpdate
		case now:
			op = stream.OpInsert
			s.matched[string(key)] = true
		case was:
			op = stream.OpDelete
			delete(s.matched, string(key))
		default:
			return nil
		}
	} else if s.opts.Where != nil {
		ok, err := s.opts.Where(row)
		if err != nil || !ok {
			return err
		}
	}
	return s.emit(row, opName(op), tsv)
}

func opName(op stream.Op) string {
	switch op {
	case stream.OpInsert:
		return OpInsert
	case stream.OpDelete:
		return OpDelete
	}
	return OpUpdate
}

// rowSlab is how many rows' values a subscription allocates at once.
const rowSlab = 128

// The ops as values of a row, boxed once.
var (
	insertValue   any = OpInsert
	updateValue   any = OpUpdate
	deleteValue   any = OpDelete
	progressValue any = OpProgress
)

func boxedOp(op string) any {
	switch op {
	case OpInsert:
		return insertValue
	case OpUpdate:
		return updateValue
	case OpDelete:
		return deleteValue
	case OpProgress:
		return progressValue
	}
	return op
}

// timeValue returns ts as the value of TimeColumn.
func timeValue(ts time.Time) any { return ts.UTC() }

// emit adds a row of the subscription: row's visible columns (NULLs for
// a nil row), op, ts (timeValue's) and the position.
func (s *Subscription) emit(row catalog.Row, op string, ts any) error {
	n := len(s.cols)
	if len(s.slab) < n {
		s.slab = make([]any, n*rowSlab)
	}
	out := s.slab[:0:n]
	s.slab = s.slab[n:]
	switch {
	case row == nil:
		out = out[:len(s.cols)-3]
	case s.opts.Project != nil:
		vals, err := s.opts.Project(row)
		if err != nil {
			return err
		}
		out = append(out, vals...)
	default:
		for _, i := range s.vis {
			out = append(out, row[i])
		}
	}
	s.sent = s.position()
	out = append(out, boxedOp(op), ts, s.sent)
	s.out = append(s.out, out)
	return nil
}

// advance records that partition p has been read up to next.
func (s *Subscription) advance(p int32, next int64) {
	if m := s.pos[s.topic]; m[p] < next {
		m[p] = next
		s.posSet = false
	}
}

// position returns the token of the subscription's position.
func (s *Subscription) position() string {
	if !s.posSet {
		s.posText, s.posSet = s.tokens.Token(s.pos[s.topic]), true
	}
	return s.posText
}

// Close ends the subscription; it may be called more than once, not
// while Next runs.
func (s *Subscription) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.cl != nil {
		s.cl.Close()
	}
	s.feeds.detach(s)
	if s.snap != nil {
		s.snap.close()
	}
	return nil
}

// sortedPartitions returns the partitions of m in order.
func sortedPartitions(m map[int32]int64) []int32 {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}
