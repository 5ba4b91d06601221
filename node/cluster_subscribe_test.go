package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/testcluster"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/stream"
)

// change is one change of a view as a subscriber reads it, or as the
// changelog has it: where in the changelog, what it did, and the row.
type change struct {
	p   int32
	off int64
	op  string
	row string
}

// TestClusterSubscribeFailover follows a view from its changelog's start
// on a node that is then killed with SIGKILL while records keep coming;
// the subscriber resumes on the other node AS OF the position of the
// last row it received. What it received, in each partition's order, is
// exactly the changelog's rows, each once, with the op the view's task
// recorded.
func TestClusterSubscribeFailover(t *testing.T) {
	began := time.Now()
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Args: []string{"--session-timeout", "2s", "--standby-replicas", "1"}})
	v := newClusterView(t, c)
	waitPlaced(t, c, c.Node(0), 1)
	v.produce(t, 200)
	v.checkReplicas(t, 2)
	t.Logf("%v: the view is replicated", time.Since(began))
	var topic string
	for _, r := range c.Node(0).Query(t, "SHOW TABLES") {
		if r[0] == "by_region" {
			topic = r[2]
		}
	}
	if topic == "" {
		t.Fatal("SHOW TABLES has no by_region")
	}
	start := materialize.Position{topic: {0: 0, 1: 0, 2: 0, 3: 0}}.String()

	var got []change
	var received atomic.Int64 // len(got), for the test's goroutine
	last := start
	// read follows the subscription on n from position at, recording
	// what it receives, until it has n rows or fails.
	read := func(n *testcluster.Node, at string, until func() bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		conn, err := n.Connect(ctx)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		rows, err := conn.Query(ctx, fmt.Sprintf(`SUBSCRIBE by_region AS OF '%s'`, at), pgx.QueryResultFormats{pgx.TextFormatCode})
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			vals := rows.RawValues()
			pos := string(vals[5])
			// The row's partition is its key's; its offset, the one
			// before its position's in that partition.
			p := kafka.Partition(vals[0], 4)
			at, err := materialize.ParsePosition(pos)
			if err != nil {
				return err
			}
			got = append(got, change{p: p, off: at[topic][p] - 1, op: string(vals[3]), row: rawText(vals[:3])})
			received.Add(1)
			last = pos
			if until() {
				// A subscription does not end: cancel it, or pgx would
				// read on for the rest of its rows when it closes them.
				cancel()
				return nil
			}
		}
		return rows.Err()
	}

	// The subscriber's node dies while records come.
	victim, survivor := c.Node(1), c.Node(0)
	done := make(chan error, 1)
	go func() { done <- read(victim, start, func() bool { return false }) }()
	c.Eventually(t, 60*time.Second, func() error {
		if received.Load() == 0 {
			return fmt.Errorf("no change received on %s", victim.ID)
		}
		return nil
	})
	v.produce(t, 100)
	victim.Kill()
	v.produce(t, 150)
	if err := <-done; err == nil {
		t.Fatal("the subscription on the killed node ended without an error")
	}
	t.Logf("%v: %d changes before the kill, up to %s", time.Since(began), len(got), last)

	// The changelog as it is once the view has every record.
	v.checkReplicas(t, 1)
	t.Logf("%v: the survivor has every record", time.Since(began))
	want := changelogRows(t, c, topic)
	t.Logf("%v: the changelog has %d changes", time.Since(began), len(want))
	if err := read(survivor, last, func() bool { return len(got) >= len(want) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("received %d changes, and the changelog has %d", len(got), len(want))
	}
	key := func(a, b change) int {
		if a.p != b.p {
			return int(a.p - b.p)
		}
		return int(a.off - b.off)
	}
	// Per partition, in order: sort both by (partition, offset), stably
	// for got, whose own order per partition must already be so.
	for p := int32(0); p < 4; p++ {
		var prev int64 = -1
		for _, g := range got {
			if g.p == p {
				if g.off <= prev {
					t.Fatalf("partition %d: offset %d after %d", p, g.off, prev)
				}
				prev = g.off
			}
		}
	}
	slices.SortStableFunc(got, key)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("change %d is %+v, and the changelog's %+v", i, got[i], want[i])
		}
	}
	if got[len(got)-1].op == "" {
		t.Fatal("no op")
	}
}

func rawText(vals [][]byte) string {
	out := make([]string, len(vals))
	for i, v := range vals {
		if v == nil {
			out[i] = "NULL"
		} else {
			out[i] = string(v)
		}
	}
	return strings.Join(out, "|")
}

// changelogRows reads the view's changelog from its start to its end, as
// a read_committed consumer, and returns its changes: the rows of
// by_region (region, n, total), each with the op the task recorded.
func changelogRows(t *testing.T, c *testcluster.Cluster, topic string) []change {
	t.Helper()
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := kafka.EndOffsets(ctx, kadm.NewClient(cl), topic)
	if err != nil {
		t.Fatal(err)
	}
	next := map[int32]int64{}
	var out []change
	for {
		behind := false
		for p, end := range ends {
			if next[p] < end {
				behind = true
			}
		}
		if !behind {
			break
		}
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if r.Offset >= ends[r.Partition] || r.Attrs.IsControl() {
				return
			}
			ch, err := stream.DecodeChange(r, 3)
			if err != nil {
				t.Fatal(err)
			}
			if ch.Marker != nil || ch.Op == stream.OpNone {
				return
			}
			var row string
			op := map[stream.Op]string{stream.OpInsert: "insert", stream.OpUpdate: "update", stream.OpDelete: "delete"}[ch.Op]
			if ch.Row != nil {
				row = fmt.Sprintf("%v|%v|%v", ch.Row[0], ch.Row[1], ch.Row[2])
			} else {
				row = fmt.Sprintf("%v|NULL|NULL", ch.Key[0])
			}
			out = append(out, change{p: r.Partition, off: r.Offset, op: op, row: row})
		})
	}
	slices.SortFunc(out, func(a, b change) int {
		if a.p != b.p {
			return int(a.p - b.p)
		}
		return int(a.off - b.off)
	})
	return out
}
