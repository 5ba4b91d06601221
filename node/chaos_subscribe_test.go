package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/basindb/basin/internal/poll"
	"github.com/basindb/basin/internal/testcluster"
)

// A chaosSubscriber follows a view through TestChaos's kills: it
// subscribes on one node and, whenever its connection is cut (its node
// SIGKILLed), goes on on another AS OF the position of the last row it
// took, with no snapshot. It applies each row's op to its copy of the
// view strictly (an insert of a key it lacks, an update or delete of one
// it has), so a change lost or seen twice between two nodes is an error,
// and in the end its copy must equal the view's query over what was
// produced.
type chaosSubscriber struct {
	view  string
	where string // "" or a WHERE clause
	nkeys int    // the view's key columns, first in its rows

	mu      sync.Mutex
	state   map[string]string // key → row, as "a|b|c"
	pos     string            // the position after the last row taken
	resumes int               // times it went on on another node
	err     error             // the first inconsistency, which ends it
	lastCut error             // why the last subscription ended

	cancel context.CancelFunc
	done   chan struct{}
}

// startChaosSubscriber starts following view (WHERE where) on c's nodes,
// first on node first, until the test ends.
func startChaosSubscriber(t *testing.T, c *testcluster.Cluster, first int, view, where string, nkeys int) *chaosSubscriber {
	s := &chaosSubscriber{view: view, where: where, nkeys: nkeys, state: map[string]string{}, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	t.Cleanup(s.stop)
	go func() {
		defer close(s.done)
		s.run(ctx, c, first)
	}()
	return s
}

func (s *chaosSubscriber) stop() {
	s.cancel()
	<-s.done
}

func (s *chaosSubscriber) run(ctx context.Context, c *testcluster.Cluster, at int) {
	for ctx.Err() == nil {
		// A node down refuses: the next one is tried.
		var conn *pgx.Conn
		_ = poll.WaitEvery(ctx, 100*time.Millisecond, func() (bool, error) {
			nodes := c.Nodes()
			n := nodes[at%len(nodes)]
			at++
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			var err error
			conn, err = n.Connect(cctx)
			return err == nil, nil
		})
		if conn == nil {
			return // ctx is done
		}
		err := s.follow(ctx, conn)
		_ = conn.Close(context.Background())
		if err != nil {
			s.fail(err)
			return
		}
	}
}

// follow reads the subscription on conn until its connection is cut (nil)
// or a row is inconsistent (an error).
func (s *chaosSubscriber) follow(ctx context.Context, conn *pgx.Conn) error {
	s.mu.Lock()
	pos := s.pos
	s.mu.Unlock()
	q := "SUBSCRIBE " + s.view
	if s.where != "" {
		q += " WHERE " + s.where
	}
	// Snapshot rows carry the position of the snapshot's end, and the
	// progress row after them says it is over: one cut before it starts
	// over.
	snapshot := pos == ""
	if snapshot {
		q += " WITH (progress = true)"
	} else {
		q += " WITH (snapshot = false) AS OF '" + pos + "'"
		s.mu.Lock()
		s.resumes++
		s.mu.Unlock()
	}
	qctx, cancel := context.WithCancel(ctx)
	defer cancel() // before rows.Close, which would drain a live stream
	rows, err := conn.Query(qctx, q, pgx.QueryResultFormats{pgx.TextFormatCode})
	if err != nil {
		s.cut(err)
		return nil
	}
	defer rows.Close()
	for rows.Next() {
		v := rows.RawValues()
		n := len(v)
		op, position := string(v[n-3]), string(v[n-1])
		s.mu.Lock()
		if op == "progress" {
			snapshot = false
			s.pos = position
			s.mu.Unlock()
			continue
		}
		if snapshot && op != "insert" {
			s.mu.Unlock()
			return fmt.Errorf("%s: a snapshot row is %s", s.view, op)
		}
		vals := make([]string, n-3)
		for i := range vals {
			vals[i] = string(v[i])
			if v[i] == nil {
				vals[i] = "NULL"
			}
		}
		key, row := strings.Join(vals[:s.nkeys], "|"), strings.Join(vals, "|")
		if err := applyOp(s.state, op, key, row); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("%s: %w (at %s)", s.view, err, position)
		}
		if !snapshot {
			s.pos = position
		}
		s.mu.Unlock()
	}
	if snapshot {
		// Cut during the snapshot: the next node starts over.
		s.mu.Lock()
		clear(s.state)
		s.mu.Unlock()
	}
	if ctx.Err() == nil {
		s.cut(rows.Err())
	}
	return nil
}

// cut notes why a subscription ended: the next goes on on another node,
// and a test that fails shows the last reason.
func (s *chaosSubscriber) cut(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastCut = err
}

func (s *chaosSubscriber) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// check waits until the subscriber's copy of the view is want (rows as
// "a|b|c"), and fails the test on an inconsistency or at the deadline.
func (s *chaosSubscriber) check(t *testing.T, want []string) {
	t.Helper()
	slices.Sort(want)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var got []string
	err := poll.WaitEvery(ctx, 50*time.Millisecond, func() (bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.err != nil {
			return false, s.err
		}
		got = slices.Sorted(maps.Values(s.state))
		return slices.Equal(got, want), nil
	})
	s.mu.Lock()
	resumes, lastCut := s.resumes, s.lastCut
	s.mu.Unlock()
	if err != nil {
		diff, _ := rowsDiff(got, want, nil)
		t.Fatalf("subscriber of %s (resumed %d times, last cut by %v): %v\n%s", s.view, resumes, lastCut, err, diff)
	}
	t.Logf("subscriber of %s: %d rows, as the view; resumed on another node %d times", s.view, len(want), resumes)
}
