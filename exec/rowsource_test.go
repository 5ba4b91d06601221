package exec

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/sql"
)

// liveSource is a RowSource whose rows the test pushes, as a SUBSCRIBE
// would produce them; end ends it.
type liveSource struct {
	mu    sync.Mutex
	rows  [][]any
	ended bool
	more  chan struct{} // closed and replaced at each push or end
}

func newLiveSource() *liveSource { return &liveSource{more: make(chan struct{})} }

func (l *liveSource) Columns() []catalog.Column {
	return []catalog.Column{{Name: "n", Type: catalog.BigInt}}
}

func (l *liveSource) push(vals ...int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range vals {
		l.rows = append(l.rows, []any{v})
	}
	close(l.more)
	l.more = make(chan struct{})
}

func (l *liveSource) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = true
	close(l.more)
	l.more = make(chan struct{})
}

func (l *liveSource) Next(ctx context.Context, dst [][]any, n int, wait time.Duration) ([][]any, bool, error) {
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		l.mu.Lock()
		k := min(n, len(l.rows))
		enough := k == n || l.ended || wait >= 0 && k > 0 || wait == 0
		if enough {
			dst = append(dst, l.rows[:k]...)
			l.rows = l.rows[k:]
			done := l.ended && len(l.rows) == 0
			l.mu.Unlock()
			return dst, done, nil
		}
		more := l.more
		l.mu.Unlock()
		select {
		case <-more:
		case <-timeout:
			return dst, false, nil
		case <-ctx.Done():
			return dst, false, ctx.Err()
		}
	}
}

func (l *liveSource) Close() error { return nil }

// recordWriter records what a statement reports; safe for a statement
// running on another goroutine.
type recordWriter struct {
	mu      sync.Mutex
	rows    []int64
	flushed int // rows written before the last Flush
	tag     string
}

func (w *recordWriter) Columns([]catalog.Column) error { return nil }
func (w *recordWriter) Row(v []any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rows = append(w.rows, v[0].(int64))
	return nil
}
func (w *recordWriter) Complete(tag string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tag = tag
	return nil
}
func (w *recordWriter) Empty() error                                        { return nil }
func (w *recordWriter) Notice(*pgerr.Error) error                           { return nil }
func (w *recordWriter) CopyOut([]catalog.Column, *pgcodec.CopyFormat) error { return nil }
func (w *recordWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushed = len(w.rows)
	return nil
}

func (w *recordWriter) seen() (rows []int64, flushed int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int64(nil), w.rows...), w.flushed
}

// TestCopyLiveSource checks that COPY of a live source flushes what it
// has before it waits for more, and that a cancel stops it at once.
func TestCopyLiveSource(t *testing.T) {
	src := newLiveSource()
	src.push(1, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &recordWriter{}
	f := pgcodec.DefaultCopyFormat(false)
	errc := make(chan error, 1)
	go func() {
		_, err := copyRows(ctx, src, &f, w)
		errc <- err
	}()
	if !poll.Cond(10*time.Second, func() bool { _, fl := w.seen(); return fl == 2 }) {
		t.Fatalf("the first rows were not flushed: %v", first(w.seen()))
	}
	src.push(3)
	if !poll.Cond(10*time.Second, func() bool { _, fl := w.seen(); return fl == 3 }) {
		t.Fatalf("a later row was not flushed: %v", first(w.seen()))
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("COPY ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled COPY did not stop")
	}
}

func first[A, B any](a A, _ B) A { return a }

// TestFetchLiveSource checks FETCH on a live source: with a timeout it
// returns what is ready (or nothing once the timeout passes); without
// one it waits for its rows or the source's end.
func TestFetchLiveSource(t *testing.T) {
	src := newLiveSource()
	c := &cursorState{name: "c", cols: src.Columns(), src: src}
	ctx := context.Background()
	fetch := func(ctx context.Context, count int64, wait time.Duration) ([]int64, error) {
		w := &recordWriter{}
		f := &fetcher{c: c, ctx: ctx, wait: wait, w: w}
		err := f.run(sql.FetchForward, count)
		rows, _ := w.seen()
		if int64(len(rows)) != f.n {
			t.Fatalf("fetch counted %d rows, wrote %d", f.n, len(rows))
		}
		return rows, err
	}

	src.push(1)
	rows, err := fetch(ctx, 10, time.Hour)
	if err != nil || len(rows) != 1 || rows[0] != 1 {
		t.Fatalf("FETCH 10 WITH (timeout) on one ready row = %v, %v", rows, err)
	}
	rows, err = fetch(ctx, 10, time.Millisecond)
	if err != nil || len(rows) != 0 {
		t.Fatalf("FETCH 10 WITH (timeout) on nothing = %v, %v", rows, err)
	}

	// Without a timeout FETCH 2 returns once it has two rows.
	type result struct {
		rows []int64
		err  error
	}
	done := make(chan result, 1)
	go func() {
		rows, err := fetch(ctx, 2, -1)
		done <- result{rows, err}
	}()
	src.push(2)
	src.push(3, 4)
	r := <-done
	if r.err != nil || len(r.rows) != 2 || r.rows[0] != 2 || r.rows[1] != 3 {
		t.Fatalf("FETCH 2 = %v, %v", r.rows, r.err)
	}

	// A live cursor is forward-only unless declared SCROLL.
	if _, err := fetch(ctx, -1, -1); pgerr.CodeOf(err) != pgerr.ObjectNotInPrerequisiteState {
		t.Fatalf("FETCH -1 on a forward-only cursor: %v", err)
	}

	// A cancel ends a waiting FETCH.
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		rows, err := fetch(cctx, 5, -1)
		done <- result{rows, err}
	}()
	cancel()
	if r := <-done; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled FETCH = %v, %v", r.rows, r.err)
	}

	// At the source's end FETCH ALL returns the rest.
	c.failed = nil
	src.push(5)
	src.end()
	rows, err = fetch(ctx, sql.FetchAll, -1)
	if err != nil || len(rows) != 2 || rows[0] != 4 || rows[1] != 5 || !c.done {
		t.Fatalf("FETCH ALL at the end = %v, %v (done %v)", rows, err, c.done)
	}
}
