package exec

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/pull"
)

// TestSettingsDerivedFollowChanges checks that what a session keeps
// derived from its settings (Memo, ParameterStatus, statement_timeout,
// basin.position_wait) is made again after every way a setting changes:
// SET, SET LOCAL and the end of its transaction, RESET ALL, DISCARD ALL,
// set_config() and the session's own writes.
func TestSettingsDerivedFollowChanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := startTableEngine(ctx, t, "CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR) WITH (kafka_topic = 't', value_format = 'json', partitions = 1)")
	s := e.NewSession(map[string]string{"user": "u"}, Client{})
	defer s.Close()
	must := func(q string) *testWriter {
		t.Helper()
		w := &testWriter{}
		if err := s.Query(ctx, q, w); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return w
	}
	builds := 0
	readFrom := func() string {
		t.Helper()
		if v, ok := s.Memo("read_from"); ok {
			return v.(string)
		}
		builds++
		v, _ := s.Setting("basin.read_from")
		s.MemoPut("read_from", v)
		return v
	}
	want := func(step, value string, wantBuilds int) {
		t.Helper()
		if got := readFrom(); got != value || builds != wantBuilds {
			t.Fatalf("%s: Memo = %q after %d builds, want %q after %d", step, got, builds, value, wantBuilds)
		}
	}

	initial := readFrom()
	want("again", initial, 1)
	must("SET basin.read_from = 'active'")
	want("SET", "active", 2)
	want("SET, again", "active", 2)
	must("BEGIN")
	must("SET LOCAL basin.read_from = 'freshest'")
	want("SET LOCAL", "freshest", 3)
	must("COMMIT")
	want("COMMIT", "active", 4)
	must("SELECT set_config('basin.read_from', 'freshest', false)")
	want("set_config", "freshest", 5)
	must("RESET ALL")
	want("RESET ALL", initial, 6)
	must("SET basin.read_from = 'active'")
	want("SET after RESET ALL", "active", 7)
	must("DISCARD ALL")
	want("DISCARD ALL", initial, 8)
	must("INSERT INTO t VALUES (1, 'a')") // moves basin.last_write_position
	want("INSERT", initial, 9)

	// ParameterStatus, at every Sync, reports a change at once.
	if got := s.ParameterStatus()["application_name"]; got != "" {
		t.Fatalf("application_name = %q before SET", got)
	}
	must("SET application_name = 'b1'")
	if got := s.ParameterStatus()["application_name"]; got != "b1" {
		t.Fatalf("application_name = %q after SET, want b1", got)
	}

	// statement_timeout takes effect on the next statement, and so does
	// its reset.
	must("SET statement_timeout = '50ms'")
	err := s.Query(ctx, "SELECT pg_sleep(5)", &testWriter{})
	var pe *pgerr.Error
	if !errors.As(err, &pe) || pe.Code != pgerr.QueryCanceled {
		t.Fatalf("pg_sleep(5) under statement_timeout 50ms: %v, want 57014", err)
	}
	must("SET statement_timeout = 0")
	must("SELECT pg_sleep(0.06)")

	// basin.position_wait, basin.min_position and basin.forwarded
	// likewise.
	must("SET basin.position_wait = '250ms'")
	var env eval.Env
	var opts pull.ReadOptions
	s.fillEnv(&env, &opts)
	if opts.PositionWait != 250*time.Millisecond {
		t.Fatalf("PositionWait = %v after SET basin.position_wait = '250ms'", opts.PositionWait)
	}
	must("SET basin.read_your_writes = off")
	s.fillEnv(&env, &opts)
	if opts.MinPosition != nil || opts.NoForward {
		t.Fatalf("MinPosition %v, NoForward %v before SET", opts.MinPosition, opts.NoForward)
	}
	pos := materialize.Position{"t": {0: 5}}
	must("SET basin.min_position = '" + pos.String() + "'")
	must("SET basin.forwarded = on")
	s.fillEnv(&env, &opts)
	if !opts.MinPosition.Equal(pos) || !opts.NoForward {
		t.Fatalf("MinPosition %v, NoForward %v after SET, want %v, true", opts.MinPosition.Describe(), opts.NoForward, pos.Describe())
	}
	opts.MinPosition.Advance("t", 0, 9) // a read's own copy
	s.fillEnv(&env, &opts)
	if !opts.MinPosition.Equal(pos) {
		t.Fatalf("MinPosition %v after a read changed its copy, want %v", opts.MinPosition.Describe(), pos.Describe())
	}
	must("RESET basin.min_position")
	must("RESET basin.forwarded")
	s.fillEnv(&env, &opts)
	if opts.MinPosition != nil || opts.NoForward {
		t.Fatalf("MinPosition %v, NoForward %v after RESET", opts.MinPosition, opts.NoForward)
	}
}
