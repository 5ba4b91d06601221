package push

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/serde"
	"github.com/basindb/basin/stream"
)

// tailBytes bounds the memory a tail keeps changes in, over all its
// partitions (as changeSize counts it); each partition may keep at least
// tailMinBytes. tailTake bounds the changes a subscription takes from
// one partition of a tail at once. (Variables for tests.)
var (
	tailBytes    = 64 << 20
	tailMinBytes = 1 << 20
	tailTake     = 512
)

// Feeds are the subscriptions of one node. Subscriptions to the same
// relation share one reader of its changes, a tail, which decodes each
// record once and keeps the latest changes for them all; a subscription
// reads with a consumer of its own only while it is behind what the tail
// keeps (a snapshot's changes, AS OF, a slow client), and moves onto the
// tail once it has caught up.
type Feeds struct {
	rt      *stream.Runtime
	cluster string

	mu     sync.Mutex
	tails  map[tailKey]*tail
	closed bool
}

// NewFeeds returns the feeds of runtime rt, whose cluster name is
// cluster.
func NewFeeds(rt *stream.Runtime, cluster string) *Feeds {
	return &Feeds{rt: rt, cluster: cluster, tails: map[tailKey]*tail{}}
}

// Close stops every tail; subscriptions go on with consumers of their
// own.
func (f *Feeds) Close() {
	f.mu.Lock()
	f.closed = true
	tails := f.tails
	f.tails = map[tailKey]*tail{}
	f.mu.Unlock()
	for _, t := range tails {
		t.cancel()
		<-t.done
	}
}

// tailKey names what a tail reads: one relation, as created (Version),
// since the same topic may be read as another stream's records.
type tailKey struct {
	name    string
	version int64
	topic   string
	ncols   int
}

// A tail reads the changes of one relation from its topic, from where its
// first subscription was, and keeps the latest of each partition,
// decoded, for every subscription to take from.
type tail struct {
	f      *Feeds
	key    tailKey
	refs   int // guarded by f.mu
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	parts map[int32]*ring
	// changed is closed, and replaced, whenever the tail reads more.
	changed chan struct{}
	// err is why the tail stopped; its subscriptions read on their own.
	err error
}

// A ring is what a tail keeps of one partition: every change at or after
// offset start, read up to next.
type ring struct {
	start, next int64
	changes     []change
	bytes, max  int
}

// A change is one record of a relation's changes, decoded.
type change struct {
	off  int64
	key  []byte // the record's key bytes
	op   stream.Op
	row  catalog.Row // nil for a delete
	keys []any       // a delete's key values, in key order
	ts   time.Time
	tsv  any // ts as a row's value (timeValue), made once for every subscriber
	size int // changeSize's
}

// changeSize is about what a change of a record whose key and value are
// n bytes, and whose row has ncols columns, holds in memory.
func changeSize(n, ncols int) int { return 128 + 24*ncols + 2*n }

// decoder turns a relation's records into changes.
type decoder struct {
	view  bool
	ncols int
	codec *serde.Codec // a stream's
}

// decode returns the change of record r; ok is false for a record that
// changes no row (a marker, a control record, OpNone, a stream's record
// that does not decode, which its own tasks log).
func (d *decoder) decode(r *kgo.Record) (c change, ok bool, err error) {
	if r.Attrs.IsControl() {
		return c, false, nil
	}
	c = change{off: r.Offset, key: r.Key, ts: r.Timestamp, op: stream.OpInsert,
		size: changeSize(len(r.Key)+len(r.Value), d.ncols)}
	defer func() {
		if ok {
			c.tsv = timeValue(c.ts) // boxed for the changes kept only
		}
	}()
	if !d.view {
		row := make(catalog.Row, d.ncols)
		if _, err := d.codec.DecodeRecordInto(row, r); err != nil {
			return c, false, nil
		}
		c.row = row
		return c, true, nil
	}
	ch, err := stream.DecodeChange(r, d.ncols)
	if err != nil || ch.Marker != nil || ch.Op == stream.OpNone {
		return c, false, err
	}
	c.op, c.row, c.keys = ch.Op, ch.Row, ch.Key
	return c, true, nil
}

// attach gives s the tail of its relation, started at s's position when
// there is none yet.
func (f *Feeds) attach(s *Subscription) {
	key := tailKey{s.rel.Name, s.rel.Version, s.topic, s.ncols}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	t := f.tails[key]
	if t == nil {
		offs := map[string]map[int32]kgo.Offset{s.topic: {}}
		parts := make(map[int32]*ring, len(s.pos[s.topic]))
		per := max(tailMinBytes, tailBytes/max(1, len(s.pos[s.topic])))
		for p, off := range s.pos[s.topic] {
			offs[s.topic][p] = kgo.NewOffset().At(off)
			parts[p] = &ring{start: off, next: off, max: per}
		}
		cl, err := f.rt.Consumer("subscribe-tail-"+s.rel.Name, offs,
			kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(4<<20))
		if err != nil {
			return // the subscription reads on its own
		}
		ctx, cancel := context.WithCancel(context.Background())
		t = &tail{f: f, key: key, cancel: cancel, done: make(chan struct{}),
			parts: parts, changed: make(chan struct{})}
		f.tails[key] = t
		go t.run(ctx, cl, s.decoder)
	}
	t.refs++
	s.tail = t
}

// detach ends s's use of its tail; the last subscription to leave a tail
// stops it.
func (f *Feeds) detach(s *Subscription) {
	t := s.tail
	if t == nil {
		return
	}
	s.tail = nil
	f.mu.Lock()
	t.refs--
	last := t.refs == 0
	if last && f.tails[t.key] == t {
		delete(f.tails, t.key)
	}
	f.mu.Unlock()
	if last {
		t.cancel()
	}
}

// run reads the tail's changes until ctx ends or reading fails.
func (t *tail) run(ctx context.Context, cl *kgo.Client, d decoder) {
	defer close(t.done)
	defer cl.Close()
	read := map[int32][]change{}
	next := map[int32]int64{}
	for {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.stop(err)
			return
		}
		if err := stream.FetchErr(fetches); err != nil {
			t.fail(err)
			return
		}
		clear(read)
		clear(next)
		var err error
		fetches.EachRecord(func(r *kgo.Record) {
			if err != nil {
				return
			}
			next[r.Partition] = r.Offset + 1
			var c change
			var ok bool
			if c, ok, err = d.decode(r); ok {
				read[r.Partition] = append(read[r.Partition], c)
			}
		})
		if err != nil {
			t.fail(fmt.Errorf("reading %s/%s: %w", t.key.name, t.key.topic, err))
			return
		}
		if len(next) > 0 {
			t.add(read, next)
		}
	}
}

// add keeps the changes read of each partition, whose offset after the
// last record read is next, and tells the subscriptions.
func (t *tail) add(read map[int32][]change, next map[int32]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for p, n := range next {
		r := t.parts[p]
		if r == nil {
			continue
		}
		for _, c := range read[p] {
			r.bytes += c.size
		}
		r.changes = append(r.changes, read[p]...)
		if r.bytes > r.max {
			// Keep the later half: a subscription behind it reads on
			// its own.
			drop := 0
			for ; r.bytes > r.max/2 && drop < len(r.changes); drop++ {
				r.bytes -= r.changes[drop].size
			}
			r.start = r.changes[drop-1].off + 1
			r.changes = slices.Clone(r.changes[drop:]) // readers hold the old array
		}
		r.next = n
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// fail stops the tail for err: its subscriptions read on their own, and
// the next to come starts another tail.
func (t *tail) fail(err error) {
	t.stop(err)
	t.f.mu.Lock()
	if t.f.tails[t.key] == t {
		delete(t.f.tails, t.key)
	}
	t.f.mu.Unlock()
}

// stop records that the tail has stopped reading, and why.
func (t *tail) stop(err error) {
	t.mu.Lock()
	t.err = err
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
}

// taken is what a subscription takes of one partition of a tail.
type taken struct {
	p       int32
	changes []change
	next    int64 // the position after them, when they are all there is
}

// take returns what the tail has for a subscription at position pos, and
// a channel closed when it has more. ok is false when the tail cannot
// serve pos: it has stopped, or dropped changes pos has not reached.
func (t *tail) take(pos map[int32]int64, dst []taken) (_ []taken, more <-chan struct{}, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return dst, nil, false
	}
	for p, off := range pos {
		r := t.parts[p]
		if r == nil || off < r.start {
			return dst, nil, false
		}
		if off >= r.next {
			continue
		}
		i, _ := slices.BinarySearchFunc(r.changes, off, func(c change, off int64) int {
			switch {
			case c.off < off:
				return -1
			case c.off > off:
				return 1
			}
			return 0
		})
		tk := taken{p: p, changes: r.changes[i:len(r.changes):len(r.changes)], next: r.next}
		if len(tk.changes) > tailTake {
			tk.changes, tk.next = tk.changes[:tailTake], -1
		}
		dst = append(dst, tk)
	}
	return dst, t.changed, true
}

// covers reports whether the tail can serve a subscription at position
// pos.
func (t *tail) covers(pos map[int32]int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return false
	}
	for p, off := range pos {
		if r := t.parts[p]; r == nil || off < r.start {
			return false
		}
	}
	return true
}
