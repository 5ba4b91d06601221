package exec

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// Cursors: DECLARE, FETCH, MOVE and CLOSE.
//
// A cursor reads a RowSource (rowsource.go) page by page. Its position
// is Postgres's: before the first row (0), on row k (1..n), or after the
// last (n+1, once the source is done). Rows are numbered in the order
// the source gave them; a scrollable cursor keeps every row it has read,
// so it can go back to any of them, and a forward-only one keeps none.
// A SELECT's rows are all read at DECLARE (its source is a snapshot, as
// INSENSITIVE says), so a SELECT cursor scrolls unless it was declared
// NO SCROLL, as a plain scan does in Postgres; a live source's cursor
// scrolls only when declared SCROLL, since it would keep every row.
//
// Lifetimes follow the transaction block (txn.go): a cursor without
// HOLD needs one (25P01 outside, except in the implicit block of a
// multi-statement Query) and closes when it ends; WITH HOLD survives
// COMMIT, and ROLLBACK closes the held cursors the block declared.
// DISCARD ALL and the session's end close them all.
//
// FETCH ... WITH (timeout = 'd') is basin's: on a live source it waits
// for the first row at most d and then returns what is there, so a
// driver can poll a SUBSCRIBE cursor. Without it a FETCH waits until it
// has its rows or the source ends. Waiting is always bounded by the
// statement's context (cancel, statement_timeout).

// cursorState is one open cursor. Only the session's goroutine uses it;
// its immutable fields are read by pg_cursors under the session's
// cursor lock.
type cursorState struct {
	name, stmt        string
	hold, scroll, bin bool
	created           time.Time
	cols              []catalog.Column
	src               RowSource
	// txn is the transaction block the cursor was declared in (the
	// session's txnSeq then), 0 outside one.
	txn uint64

	// kept are the rows read so far when scroll is set (kept[k-1] is row
	// k); a forward-only cursor keeps none.
	kept [][]any
	// read counts the rows read from src; done is set once it ended.
	read int64
	done bool
	// pos is the position: 0 before the first row, k on row k, read+1
	// after the last (only once done).
	pos int64
	// moved is set once the cursor has moved: a forward-only cursor can
	// still be "rewound" to where it stands before that.
	moved bool
	// failed is set when reading the source failed; the cursor is then
	// unusable, as a failed portal is in Postgres.
	failed error
}

// cursors are a session's open cursors by name. mu guards m; the
// cursors themselves are the session goroutine's.
type cursors struct {
	mu sync.Mutex
	m  map[string]*cursorState
}

func (cs *cursors) get(name string) *cursorState {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.m[name]
}

// closeIf closes and removes the cursors f selects.
func (cs *cursors) closeIf(f func(*cursorState) bool) {
	cs.mu.Lock()
	var closing []*cursorState
	for name, c := range cs.m {
		if f(c) {
			closing = append(closing, c)
			delete(cs.m, name)
		}
	}
	cs.mu.Unlock()
	for _, c := range closing {
		_ = c.src.Close()
	}
}

// list returns what pg_cursors shows of the open cursors.
func (cs *cursors) list() []catalog.Cursor {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]catalog.Cursor, 0, len(cs.m))
	for _, c := range cs.m {
		out = append(out, catalog.Cursor{Name: c.name, Statement: c.stmt, Holdable: c.hold, Binary: c.bin,
			Scrollable: c.scroll, Created: c.created})
	}
	slices.SortFunc(out, func(a, b catalog.Cursor) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func errNoCursor(name string) error {
	return pgerr.New(pgerr.InvalidCursorName, "cursor %q does not exist", name)
}

// declare runs DECLARE: the query starts (a SELECT runs to its end) and
// the cursor stands before its first row.
func (s *Session) declare(ctx context.Context, st *sql.Declare, text string, w ResultWriter) error {
	if !st.Hold && !s.inTxn && !s.implicitTxn {
		return pgerr.New(pgerr.NoActiveSQLTransaction, "DECLARE CURSOR can only be used in transaction blocks").
			WithHint("Run BEGIN first, or declare the cursor WITH HOLD.")
	}
	if st.Binary {
		return pgerr.New(pgerr.FeatureNotSupported, "BINARY cursors are not supported").
			WithHint("Fetch in binary through the extended protocol's result formats instead.")
	}
	if s.cursors.get(st.Name) != nil {
		return pgerr.New(pgerr.DuplicateCursor, "cursor %q already exists", st.Name)
	}
	src, err := s.openSource(ctx, st.Query, w)
	if err != nil {
		return err
	}
	_, finished := src.(*finishedSource)
	c := &cursorState{name: st.Name, stmt: text, hold: st.Hold, bin: st.Binary, created: time.Now(),
		cols: src.Columns(), src: src,
		scroll: st.Scroll == sql.Scroll || st.Scroll == sql.ScrollDefault && finished}
	if s.inTxn {
		c.txn = s.txnSeq
	}
	s.cursors.mu.Lock()
	if s.cursors.m == nil {
		s.cursors.m = map[string]*cursorState{}
	}
	s.cursors.m[st.Name] = c
	s.cursors.mu.Unlock()
	return w.Complete("DECLARE CURSOR")
}

// closeCursor runs CLOSE.
func (s *Session) closeCursor(st *sql.Close, w ResultWriter) error {
	if st.All {
		s.cursors.closeIf(func(*cursorState) bool { return true })
		return w.Complete("CLOSE CURSOR ALL")
	}
	if s.cursors.get(st.Name) == nil {
		return errNoCursor(st.Name)
	}
	s.cursors.closeIf(func(c *cursorState) bool { return c.name == st.Name })
	return w.Complete("CLOSE CURSOR")
}

// endCursors closes the cursors that end with the transaction block:
// those without HOLD, and after a rollback also the held ones the block
// declared.
func (s *Session) endCursors(rollback bool) {
	seq := s.txnSeq
	s.cursors.closeIf(func(c *cursorState) bool {
		return !c.hold || rollback && c.txn == seq && seq != 0
	})
}

// fetchColumns returns the columns FETCH from the named cursor returns,
// for Describe; nil for MOVE or a cursor that does not exist (Postgres
// describes those as returning no rows, and Execute reports the error).
func (s *Session) fetchColumns(st *sql.Fetch) []catalog.Column {
	if st.Move {
		return nil
	}
	if c := s.cursors.get(st.Name); c != nil {
		return c.cols
	}
	return nil
}

// fetch runs FETCH and MOVE.
func (s *Session) fetch(ctx context.Context, st *sql.Fetch, w ResultWriter) error {
	c := s.cursors.get(st.Name)
	if c == nil {
		return errNoCursor(st.Name)
	}
	if c.failed != nil {
		return pgerr.New(pgerr.InvalidCursorState, "cursor %q cannot be read: an earlier FETCH of it failed (%v)", c.name, c.failed).
			WithHint("CLOSE it and declare it again.")
	}
	wait := time.Duration(-1)
	if st.Timeout != "" {
		d, err := time.ParseDuration(st.Timeout)
		if err != nil || d < 0 {
			return pgerr.New(pgerr.InvalidParameterValue, "invalid FETCH timeout %q", st.Timeout).WithPosition(st.TimeoutPos).
				WithHint("Give a duration such as '500ms' or '2s'.")
		}
		wait = d
	}
	if !st.Move {
		if err := w.Columns(c.cols); err != nil {
			return err
		}
	}
	f := &fetcher{c: c, ctx: ctx, wait: wait, move: st.Move, w: w}
	err := f.run(st.Direction, st.Count)
	if err != nil {
		if _, coded := pgerr.As(err); !coded || f.srcErr {
			c.failed = err
		}
		return err
	}
	verb := "FETCH "
	if st.Move {
		verb = "MOVE "
	}
	return w.Complete(verb + strconv.FormatInt(f.n, 10))
}

// fetcher carries out one FETCH or MOVE on a cursor.
type fetcher struct {
	c    *cursorState
	ctx  context.Context
	wait time.Duration
	move bool
	w    ResultWriter
	// n counts the rows returned (FETCH) or passed over (MOVE).
	n int64
	// srcErr is set when the error came from the source.
	srcErr bool
	// waited is set once a Next with wait >= 0 returned: a FETCH with a
	// timeout waits once, then takes only what is ready.
	waited bool
}

func errScrollOnly() error {
	return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "cursor can only scan forward").
		WithHint("Declare it with SCROLL option to enable backward scan.")
}

// run moves as dir and count say, emitting the rows a FETCH returns.
func (f *fetcher) run(dir sql.FetchDirection, count int64) error {
	c := f.c
	switch dir {
	case sql.FetchForward, sql.FetchBackward:
		backward := dir == sql.FetchBackward
		if count < 0 {
			backward, count = !backward, -count
			if count < 0 { // -MinInt64
				count = math.MaxInt64
			}
		}
		if count == 0 {
			return f.current()
		}
		if backward {
			if !c.scroll {
				return errScrollOnly()
			}
			return f.backward(count)
		}
		return f.forward(count)
	case sql.FetchAbsolute:
		switch {
		case count > 0:
			if count <= c.pos || c.pos > c.read {
				if err := f.rewind(); err != nil {
					return err
				}
			}
			if err := f.skip(count - 1 - c.pos); err != nil {
				return err
			}
			return f.one()
		case count < 0:
			if !c.scroll {
				return errScrollOnly()
			}
			if err := f.skip(math.MaxInt64); err != nil {
				return err
			}
			// Now after the last row (read+1): back up to row read+1+count.
			return f.backTo(c.read + 1 + count)
		default:
			return f.rewind()
		}
	default: // relative
		switch {
		case count > 0:
			if err := f.skip(count - 1); err != nil {
				return err
			}
			return f.one()
		case count < 0:
			if !c.scroll {
				return errScrollOnly()
			}
			return f.backTo(c.pos + count)
		default:
			return f.current()
		}
	}
}

// backTo moves a scrollable cursor back to row target (before the
// first row when target < 1) and returns that row.
func (f *fetcher) backTo(target int64) error {
	c := f.c
	if target < 1 {
		c.pos = 0
		return nil
	}
	c.pos = target
	return f.emit(c.kept[target-1])
}

// current is FETCH 0 (RELATIVE 0, FORWARD 0): the row the cursor is on,
// if any. MOVE 0 counts it without moving.
func (f *fetcher) current() error {
	c := f.c
	if c.pos < 1 || c.pos > c.read {
		return nil
	}
	if f.move {
		f.n = 1
		return nil
	}
	if !c.scroll {
		return errScrollOnly()
	}
	return f.emit(c.kept[c.pos-1])
}

// rewind puts the cursor before its first row, which a forward-only
// cursor can do only where it already stands.
func (f *fetcher) rewind() error {
	c := f.c
	if c.pos == 0 && !c.moved {
		return nil
	}
	if !c.scroll {
		return errScrollOnly()
	}
	c.pos = 0
	return nil
}

// forward returns the next count rows, or as many as there are.
func (f *fetcher) forward(count int64) error {
	c := f.c
	c.moved = true
	for count > 0 {
		if c.pos < c.read && !c.scroll {
			// A forward-only cursor keeps no rows: the ones an earlier
			// FETCH read and could not return are gone.
			c.pos = c.read
		}
		if c.pos < c.read {
			// Rows read before, which a scrollable cursor keeps.
			c.pos++
			count--
			if err := f.emit(c.kept[c.pos-1]); err != nil {
				return err
			}
			continue
		}
		if c.done {
			c.pos = c.read + 1
			return nil
		}
		got, stop, err := f.pull(count)
		if err != nil {
			return err
		}
		for _, r := range got {
			c.pos++
			count--
			if err := f.emit(r); err != nil {
				return err
			}
		}
		if stop {
			return nil
		}
	}
	return nil
}

// skip moves count rows forward without returning them (the rows before
// the one ABSOLUTE or RELATIVE returns).
func (f *fetcher) skip(count int64) error {
	if count <= 0 {
		return nil
	}
	move, n := f.move, f.n
	f.move = true
	err := f.forward(count)
	f.move, f.n = move, n
	return err
}

// one returns the next row, if there is one.
func (f *fetcher) one() error {
	c := f.c
	if c.done && c.pos >= c.read {
		c.pos = c.read + 1
		return nil
	}
	return f.forward(1)
}

// backward returns up to count rows before the current one, nearest
// first, and leaves the cursor before the first when it runs out.
func (f *fetcher) backward(count int64) error {
	c := f.c
	c.moved = true
	for count > 0 {
		if c.pos-1 < 1 {
			c.pos = 0
			return nil
		}
		c.pos--
		count--
		if err := f.emit(c.kept[c.pos-1]); err != nil {
			return err
		}
	}
	return nil
}

// pull reads up to n rows from the source (at most a batch at a time),
// keeping them when the cursor scrolls. stop reports that the FETCH
// should return what it has: its timeout passed, or it waited once and
// the source has nothing more ready.
func (f *fetcher) pull(n int64) (rows [][]any, stop bool, err error) {
	c := f.c
	want := int(min(n, copyBatch))
	wait := f.wait
	if wait >= 0 && f.waited {
		wait = 0
	}
	rows, done, err := c.src.Next(f.ctx, nil, want, wait)
	if err != nil {
		f.srcErr = true
		return nil, false, err
	}
	if wait >= 0 {
		f.waited = true
	}
	c.read += int64(len(rows))
	if c.scroll {
		c.kept = append(c.kept, rows...)
	}
	if done {
		c.done = true
	}
	return rows, !done && f.wait >= 0 && len(rows) < want, nil
}

// emit returns a row (FETCH) or counts it (MOVE).
func (f *fetcher) emit(r []any) error {
	f.n++
	if f.move {
		return nil
	}
	return f.w.Row(r)
}

// String is for debugging.
func (c *cursorState) String() string {
	return fmt.Sprintf("cursor %s pos %d read %d done %v scroll %v", c.name, c.pos, c.read, c.done, c.scroll)
}
