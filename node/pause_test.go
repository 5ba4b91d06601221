package node

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/basindb/basin/internal/testcluster"
)

// TestThawedActiveNotCurrent freezes a partition's active (SIGSTOP)
// while records reach its source, sends it a read bounded by
// basin.acceptable_offset_lag = 0 while it is frozen, and thaws it:
// the process wakes knowing its source's end as it was before, and used
// to answer with its old rows as current if the read was taken before
// its consumer had fetched again. The answer must be the new rows or a
// refusal (55000), never the old rows, in every one of a few rounds.
func TestThawedActiveNotCurrent(t *testing.T) {
	c, v, placed := startClusterView(t, 3, "30s", 300)
	task, part, active, _, reader := haPartition(t, c, placed)
	t.Logf("partition %s (%s): active %s", part, task, active.ID)
	haWaitGroupStable(t, c)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := active.Conn(t)
	if _, err := conn.Exec(ctx, "SET basin.acceptable_offset_lag = 0"); err != nil {
		t.Fatal(err)
	}
	query := "SELECT region, n, total, _offset_lag, _time_lag_ms, _served_by FROM by_region WHERE _partition = " + part
	regionsRows, err := haRows(ctx, conn, "SELECT region FROM by_region WHERE _partition = "+part)
	if err != nil {
		t.Fatal(err)
	}
	want := func() string {
		var out []string
		for _, r := range regionsRows {
			w := v.want[r[0]]
			out = append(out, fmt.Sprintf("%s|%d|%d", r[0], w[0], w[1]))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	rowsText := func(rows [][]string) string {
		var out []string
		for _, r := range rows {
			out = append(out, strings.Join(r[:3], "|"))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	frozen := false
	defer func() {
		if frozen {
			active.Cont()
		}
	}()
	refused := 0
	const rounds = 4
	for round := range rounds {
		// Current before the freeze.
		c.Eventually(t, 30*time.Second, func() error {
			rows, err := haRows(ctx, conn, query)
			if err != nil {
				return err
			}
			if got := rowsText(rows); got != want() {
				return fmt.Errorf("round %d: rows before the freeze:\n%s\nwant:\n%s", round, got, want())
			}
			return nil
		})
		old := want()
		active.Stop()
		stopped := time.Now()
		frozen = true
		// Records go on arriving while the active is frozen, for well
		// over a second (stream's pause watch counts a second without
		// running as a pause; a shorter one is within the lag's
		// documented lower bound).
		for produced := 0; produced < 40 || time.Since(stopped) < 1500*time.Millisecond; produced++ {
			v.produce(t, 1)
		}
		haWaitAlive(t, c, []*testcluster.Node{reader}, active.ID, false)
		// The query is on its way before the thaw: written and flushed
		// to the connection, which the stopped process cannot read yet.
		pc := conn.PgConn()
		pc.Frontend().Send(&pgproto3.Query{String: query})
		if err := pc.Frontend().Flush(); err != nil {
			t.Fatalf("round %d: sending the read to the frozen process: %v", round, err)
		}
		active.Cont()
		thawed := time.Now()
		frozen = false
		a := simpleAnswer(ctx, pc)
		switch {
		case a.err != nil:
			if !strings.Contains(a.err.Error(), "55000") {
				t.Fatalf("round %d: the read right after the thaw failed with %v, want 55000 or the new rows", round, a.err)
			}
			refused++
		case rowsText(a.rows) == old:
			t.Fatalf("round %d: the thawed active, frozen %v, served its old rows within acceptable_offset_lag = 0:\n%s\n%v", round, thawed.Sub(stopped), old, a.rows)
		case rowsText(a.rows) != want():
			t.Fatalf("round %d: rows right after the thaw:\n%s\nwant:\n%s", round, rowsText(a.rows), want())
		}
		haWaitAlive(t, c, []*testcluster.Node{reader}, active.ID, true)
	}
	t.Logf("%d of %d reads right after a thaw refused, the others current", refused, rounds)
}

// simpleAnswer reads the answer to a simple Query already sent on pc:
// its rows as text, or its error.
func simpleAnswer(ctx context.Context, pc *pgconn.PgConn) (a struct {
	rows [][]string
	err  error
}) {
	for {
		msg, err := pc.ReceiveMessage(ctx)
		if err != nil {
			a.err = err
			return a
		}
		switch m := msg.(type) {
		case *pgproto3.DataRow:
			row := make([]string, len(m.Values))
			for i, v := range m.Values {
				row[i] = string(v)
			}
			a.rows = append(a.rows, row)
		case *pgproto3.ErrorResponse:
			a.err = fmt.Errorf("%s (SQLSTATE %s)", m.Message, m.Code)
		case *pgproto3.ReadyForQuery:
			return a
		}
	}
}
