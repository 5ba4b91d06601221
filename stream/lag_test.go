package stream

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTimeLagBoundsStaleness checks that a replica behind its input
// reports a time lag no smaller than the age of the oldest input record
// it does not reflect: a time-bounded read must never take a replica that
// lacks old records for a fresh one.
func TestTimeLagBoundsStaleness(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	hourAgo := now.Add(-time.Hour)
	ts := newTaskState(0)
	ts.markRestored()

	// Caught up: no lag at all.
	if off, tl := ts.Lag(now); off != 0 || tl != 0 {
		t.Fatalf("caught up: lag %d, %d ms; want 0, 0", off, tl)
	}

	// A new replica, five records behind, nothing read or applied: it
	// cannot know how old they are, so no time bound may admit it.
	ts.inputEnd.Store(5)
	if off, tl := ts.Lag(now); off != 5 || tl < 50*365*24*3600*1000 {
		t.Fatalf("new and behind: lag %d, %d ms; want 5 and a time lag no bound admits", off, tl)
	}

	// A batch in flight whose oldest record is an hour old.
	var fetches kgo.Fetches
	fetches = append(fetches, kgo.Fetch{Topics: []kgo.FetchTopic{{Topic: "in", Partitions: []kgo.FetchPartition{{
		Partition: 0,
		Records: []*kgo.Record{
			{Timestamp: hourAgo, Offset: 0},
			{Timestamp: hourAgo.Add(time.Minute), Offset: 1},
		},
	}}}}})
	ts.pending(fetches)
	if _, tl := ts.Lag(now); tl != time.Hour.Milliseconds() {
		t.Fatalf("batch in flight: time lag %d ms, want %d (the age of its oldest record)", tl, time.Hour.Milliseconds())
	}

	// The batch applied, three records still to read: they are no older
	// than the last one applied, whose age bounds theirs.
	ts.applied(hourAgo.Add(time.Minute))
	ts.inputNext.Store(2)
	if off, tl := ts.Lag(now); off != 3 || tl != (59*time.Minute).Milliseconds() {
		t.Fatalf("after the batch: lag %d, %d ms; want 3, %d", off, tl, (59 * time.Minute).Milliseconds())
	}

	// A forwarded input behind counts too.
	ts.inputNext.Store(5)
	ts.fwdEnd.Store(2)
	if off, tl := ts.Lag(now); off != 2 || tl == 0 {
		t.Fatalf("forwarded input behind: lag %d, %d ms; want 2 and a time lag", off, tl)
	}
}
