package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/pull"
	"github.com/basindb/basin/push"
	"github.com/basindb/basin/serde"
	"github.com/basindb/basin/sql"
	"github.com/basindb/basin/stream"
)

// Version is basin's version.
const Version = "0.1.0"

// ServerVersion is the Postgres version basin reports to clients: one
// that drivers, psql and ORMs accept.
const ServerVersion = "15.0"

// CommandLog is what sessions need of the catalog's command log.
type CommandLog interface {
	Submit(ctx context.Context, cmd *catalog.Command) (catalog.Change, error)
	Sync(ctx context.Context) error
}

// Engine is what sessions share: the catalog, the command log, the
// runtime and a producer for INSERT. Its exported fields are set before
// the engine serves its first session and never written after: sessions
// read them without a lock. What comes to exist later (a node's cluster
// membership, which joins once the server listens) is reached through a
// field set before, such as Members.
type Engine struct {
	Catalog *catalog.Catalog
	Log     CommandLog
	Runtime *stream.Runtime
	// Reads is the pull engine over Runtime's stores.
	Reads *pull.Engine
	// ObservePull, when set, is told of every finished pull query
	// (metrics).
	ObservePull func(PullStats)
	Producer    *kgo.Client
	Cluster     string
	Node        string
	// DefaultPartitions is the partition count of topics basin creates
	// when the statement names none.
	DefaultPartitions int32
	Logger            *slog.Logger

	// Backends signals the node's other sessions (pg_cancel_backend);
	// nil when there is no server.
	Backends eval.Backends

	// DiskFullSince returns the error the embedded broker met writing
	// for lack of space at or after a time, nil if none; nil without an
	// embedded broker. A produce the broker could not write fails with
	// UNKNOWN_SERVER_ERROR, which names no disk: INSERT asks here
	// (produceError).
	DiskFullSince func(since time.Time) error

	// Members reports the cluster's tasks and nodes (SHOW TASKS, SHOW
	// CLUSTER); nil reports this node's runtime alone.
	Members ClusterInfo

	pids     atomic.Int32
	rrCount  atomic.Uint32
	sessions sync.Map // PID → *Session, for pg_stat_activity

	planCache planCacheCounters

	// notify routes LISTEN/NOTIFY's notifications (notify.go), and
	// feeds notifies the listeners of views' names (listenview.go).
	notify notifyHub
	feeds  viewFeeds

	// subs shares the readers of relations' changes among the
	// subscriptions of the engine's sessions (push.Feeds), made by
	// subscriptions when the first one starts.
	subsOnce sync.Once
	subs     *push.Feeds
}

// subscriptions returns the engine's push.Feeds.
func (e *Engine) subscriptions() *push.Feeds {
	e.subsOnce.Do(func() { e.subs = push.NewFeeds(e.Runtime, e.Cluster) })
	return e.subs
}

// Session is one client connection's state.
type Session struct {
	e    *Engine
	user string
	db   string
	pid  int32
	vars map[string]string
	// inTxn is set inside a transaction block, txnFailed after an error
	// in it, txnWarned once a write in it was told it is applied at once
	// (txn.go).
	inTxn, txnFailed, txnWarned bool
	// initial holds each setting's value at session start, what RESET
	// returns to; txnSaved the values to restore when the transaction
	// ends (SET LOCAL, SET TRANSACTION).
	initial  map[string]string
	txnSaved map[string]string
	// txnSeq counts the transaction blocks begun, so a cursor knows the
	// block it was declared in; implicitTxn is set while the statements
	// of a multi-statement Query outside a block run, which Postgres
	// treats as one implicit block (cursor.go).
	txnSeq      uint64
	implicitTxn bool
	// cursors are the open cursors (cursor.go).
	cursors cursors
	// writes is the position of the session's own INSERTs: with
	// basin.read_your_writes on, reads wait until a replica reflects it.
	// seen is the position each relation partition its reads were
	// served at: with basin.monotonic_reads on, a read of a partition
	// waits until a replica reflects what was seen of it (positions.go).
	writes materialize.Position
	seen   pull.SeenPositions

	client  Client
	started time.Time
	act     activity
	// lastRead is where the last SELECT's partitions were read.
	lastRead []pull.PartitionRead
	// plans is the plan cache of simple queries (plancache.go).
	plans map[string]*cachedShape
	// varsGen counts changes to vars after the session started (setVar):
	// what is derived from the settings is kept until it moves.
	varsGen atomic.Uint64
	// derived are the settings every statement reads, parsed as of
	// varsGen derived.gen (derivedSettings).
	derived derived
	// prepared counts the prepared statements the client holds
	// (countPrepared), against basin.max_prepared_statements.
	prepared atomic.Int64
	// memo holds what reads derive from the settings and a relation
	// (Memo), while varsGen stays at memo.gen.
	memo struct {
		sync.Mutex
		gen uint64
		m   map[any]any
	}
	// notify is the session's LISTEN/NOTIFY state (notify.go).
	notify sessionNotify
}

// ResultWriter receives statement results; pgwire.ResultWriter satisfies
// it.
type ResultWriter interface {
	Columns(cols []catalog.Column) error
	Row(vals []any) error
	Complete(tag string) error
	Empty() error
	Notice(n *pgerr.Error) error
	// CopyOut starts a COPY TO STDOUT result in format; rows follow
	// with Row and the end with Complete (copy.go).
	CopyOut(cols []catalog.Column, format *pgcodec.CopyFormat) error
	// Flush sends what is buffered to the client now: a statement that
	// produces rows over a long time calls it before it waits.
	Flush() error
}

// NewSession starts a session for a connection's startup parameters.
// Close ends it.
func (e *Engine) NewSession(params map[string]string, client Client) *Session {
	if client.PID == 0 {
		client.PID = e.pids.Add(1)
	}
	s := &Session{e: e, user: params["user"], db: params["database"], pid: client.PID, vars: map[string]string{},
		client: client, started: time.Now().UTC()}
	if s.user == "" {
		s.user = "basin"
	}
	if s.db == "" {
		s.db = "basin"
	}
	for k, v := range defaultSettings {
		s.vars[k] = v
	}
	if v := params["application_name"]; v != "" {
		s.vars["application_name"] = v
	}
	if v := params["client_encoding"]; v != "" {
		s.vars["client_encoding"] = v
	}
	s.vars["session_authorization"] = s.user
	s.initial = maps.Clone(s.vars)
	s.endStatement()
	e.sessions.Store(s.pid, s)
	return s
}

// defaultSettings are the session settings and their defaults.
var defaultSettings = map[string]string{
	"server_version":              ServerVersion,
	"server_encoding":             "UTF8",
	"client_encoding":             "UTF8",
	"datestyle":                   "ISO, MDY",
	"timezone":                    "UTC",
	"integer_datetimes":           "on",
	"standard_conforming_strings": "on",
	"application_name":            "",
	"is_superuser":                "on",
	"search_path":                 "public",
	"extra_float_digits":          "1",
	"statement_timeout":           "0",
	"transaction_isolation":       "read committed",
	"intervalstyle":               "postgres",
	"basin.acceptable_offset_lag": "",
	"basin.acceptable_time_lag":   "",
	"basin.read_from":             "any",
	"basin.min_position":          "",
	"basin.position_wait":         "5s",
	"basin.freshness_notices":     "off",
	"basin.read_your_writes":      "on",
	"basin.monotonic_reads":       "off",
	settingPlanCache:              "on",
	settingMaxStatementBytes:      "1MB",
	settingQueryMemory:            "256MB",
	settingMaxPrepared:            "1000",
	// basin.last_write_position is read-only: the token of the
	// session's writes so far (positions.go).
	"basin.last_write_position": "",
	// basin.forwarded marks the session of a read forwarded by another
	// node: it reads only this node's replicas.
	"basin.forwarded": "off",
	// basin.forward_timeout bounds the wait for another node's first
	// row before the read moves to the next replica.
	"basin.forward_timeout": "2s",

	"session_authorization":          "",
	"transaction_read_only":          "off",
	"transaction_deferrable":         "off",
	"default_transaction_isolation":  "read committed",
	"default_transaction_read_only":  "off",
	"default_transaction_deferrable": "off",
}

// reportedSettings are sent to the client as ParameterStatus.
var reportedSettings = []string{"server_version", "server_encoding", "client_encoding", "datestyle", "timezone",
	"integer_datetimes", "standard_conforming_strings", "application_name", "is_superuser", "intervalstyle"}

var reportedNames = map[string]string{"datestyle": "DateStyle", "timezone": "TimeZone", "intervalstyle": "IntervalStyle"}

// ParameterStatus returns the settings reported to the client.
func (s *Session) ParameterStatus() map[string]string {
	// Called at every Sync: while no setting changed, the map made at
	// the last change is returned again.
	return s.derivedSettings().reported
}

// PID is the session's backend process id.
func (s *Session) PID() int32 { return s.pid }

// Close ends the session: it closes its cursors and stops listening,
// and what its open transaction would have notified is dropped.
func (s *Session) Close() {
	s.cursors.closeIf(func(*cursorState) bool { return true })
	s.endNotifyTxn(false)
	s.unlistenAll()
	s.e.sessions.CompareAndDelete(s.pid, s)
}

// versionText is what version() returns.
var versionText = fmt.Sprintf("PostgreSQL %s (basin %s)", ServerVersion, Version)

// env returns the evaluation context of a statement of the session.
func (s *Session) env() *eval.Env {
	env := &eval.Env{}
	s.fillEnv(env, nil)
	return env
}

// statement returns a statement's evaluation context and the options of
// its reads.
func (s *Session) statement() (*eval.Env, *pull.ReadOptions) {
	env, opts := &eval.Env{}, &pull.ReadOptions{}
	s.fillEnv(env, opts)
	return env, opts
}

// fillEnv sets env and opts (when not nil) up for a statement of the
// session.
func (s *Session) fillEnv(env *eval.Env, opts *pull.ReadOptions) {
	d := s.derivedSettings()
	*env = eval.Env{User: s.user, Database: s.db, PID: s.pid, Now: time.Now().UTC().Truncate(time.Microsecond),
		Version: versionText, Session: s, Backends: s.e.Backends, QueryMemory: d.queryMemory, Loc: d.loc}
	if opts == nil {
		return
	}
	*opts = pull.ReadOptions{Settings: s, PositionWait: d.positionWait}
	s.fillBound(opts, d)
	opts.NoForward = d.forwarded != "off"
	opts.ServeRestoring = d.forwarded == "restoring"
}

// Query runs the statements of a simple Query message. Outside a
// transaction block they are one implicit transaction, which is what
// LISTEN and NOTIFY see (notify.go).
func (s *Session) Query(ctx context.Context, text string, w ResultWriter) (err error) {
	defer func() { s.endImplicitTxn(err) }()
	if err := s.checkStatementSize(text); err != nil {
		return s.failTxn(err)
	}
	ran, learn, err := s.cachedQuery(ctx, text, w)
	if ran {
		return err
	}
	if err := s.query(ctx, text, w); err != nil {
		return err
	}
	if learn != nil {
		learn()
	}
	return nil
}

func (s *Session) query(ctx context.Context, text string, w ResultWriter) error {
	stmts, err := s.parseStatement(ctx, text)
	if err != nil {
		return s.failTxn(err)
	}
	if len(stmts) == 0 {
		return w.Empty()
	}
	if len(stmts) > 1 && !s.inTxn {
		// The statements run in Postgres's implicit block: cursors
		// without HOLD may be declared, and close at its end.
		s.implicitTxn = true
		defer func() {
			s.implicitTxn = false
			if !s.inTxn {
				s.endCursors(false)
			}
		}()
	}
	for _, st := range stmts {
		sctx, cancel, timeout := s.statementContext(ctx)
		s.startStatement(st.Text)
		err := timeout(s.exec(sctx, st.Stmt, st.Text, w))
		s.endStatement()
		cancel()
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled) {
				return pgerr.New(pgerr.QueryCanceled, "canceling statement due to user request")
			}
			return err
		}
	}
	return nil
}

// exec runs one statement. In a transaction block, an error fails the
// block and a failed block refuses all but ROLLBACK and COMMIT (txn.go).
func (s *Session) exec(ctx context.Context, st sql.Statement, text string, w ResultWriter) error {
	if err := s.txnGate(st); err != nil {
		return err
	}
	if what := writeName(st); what != "" {
		if err := s.checkWrite(what, w); err != nil {
			return s.failTxn(err)
		}
	}
	return s.failTxn(s.run(ctx, st, text, w))
}

func (s *Session) run(ctx context.Context, st sql.Statement, text string, w ResultWriter) error {
	switch st := st.(type) {
	case *sql.Select:
		if st.Emit == sql.EmitChanges {
			sub, err := emitChanges(st)
			if err != nil {
				return err
			}
			return s.subscribeStmt(ctx, sub, w)
		}
		return s.selectStmt(ctx, st, w)
	case *sql.Subscribe:
		return s.subscribeStmt(ctx, st, w)
	case *sql.Insert:
		return s.insert(ctx, st, w)
	case *sql.Delete:
		return s.deleteStmt(ctx, st, w)
	case *sql.CreateSource:
		return s.createSource(ctx, st, text, w)
	case *sql.CreateTableAs:
		return s.createView(ctx, st, text, w)
	case *sql.CreateStreamAs:
		return s.createStream(ctx, st, text, w)
	case *sql.Drop:
		return s.drop(ctx, st, w)
	case *sql.Show:
		return s.show(ctx, st, w)
	case *sql.Resume:
		return s.resume(ctx, st, w)
	case *sql.InsertSelect:
		return s.insertSelect(ctx, st, text, w)
	case *sql.Terminate:
		return s.terminate(ctx, st, w)
	case *sql.Describe:
		return s.describe(st, w)
	case *sql.Set:
		return s.set(st, w)
	case *sql.Deallocate:
		return s.deallocate(st, w)
	case *sql.Discard:
		return s.discard(st, w)
	case *sql.Explain:
		return s.explain(ctx, st, w)
	case *sql.Txn:
		return s.txn(st, w)
	case *sql.Copy:
		return s.copyStmt(ctx, st, w)
	case *sql.Declare:
		return s.declare(ctx, st, text, w)
	case *sql.Fetch:
		return s.fetch(ctx, st, w)
	case *sql.Close:
		return s.closeCursor(st, w)
	case *sql.Listen:
		return s.listenStmt(st, w)
	}
	return pgerr.New(pgerr.FeatureNotSupported, "statement %T is not supported", st)
}

func (s *Session) selectStmt(ctx context.Context, st *sql.Select, w ResultWriter) error {
	plan, err := planner.PlanSelect(s.e.Catalog, st)
	if err != nil {
		return err
	}
	if err := w.Columns(plan.Columns); err != nil {
		return err
	}
	n := 0
	env, opts := s.statement()
	reads, err := s.e.read(nil, ctx, plan, nil, env, withRaw(opts, w, &n), func(r catalog.Row) error {
		n++
		return w.Row(r)
	})
	if err != nil {
		return err
	}
	s.afterRead(plan.Rel, reads, w)
	return w.Complete("SELECT " + strconv.Itoa(n))
}

func (s *Session) insert(ctx context.Context, st *sql.Insert, w ResultWriter) error {
	rel, err := s.e.Catalog.Resolve(st.Table)
	if err != nil {
		return withPosition(err, st.Pos)
	}
	if strings.EqualFold(rel.Name, catalog.ProcessingLogName) {
		return pgerr.New(pgerr.InsufficientPrivilege, "cannot insert into %s", rel.Name).
			WithDetail("The processing log is written by basin's persistent queries.")
	}
	if catalog.InternalTopic(rel.Topic) {
		// Declared before PlanCreateSource refused internal topics (or by
		// basin itself): its topic still must not take a user's records.
		return pgerr.New(pgerr.InsufficientPrivilege, "cannot insert into %s: its topic %s is an internal topic of basin or Kafka", rel.Name, rel.Topic).
			WithDetail("Records written there by anyone but basin or Kafka corrupt views and the catalog.").
			WithHint("DROP %s and declare it over a topic of your own.", rel.Name)
	}
	if rel.Kind == catalog.KindView {
		return pgerr.New(pgerr.WrongObjectType, "cannot insert into view %s", rel.Name).
			WithHint("A view is maintained by its query; insert into its source %s.", strings.Join(rel.Sources, ", "))
	}
	cols := rel.Schema.Columns
	idx := make([]int, 0, len(cols))
	if len(st.Columns) == 0 {
		// Without a column list the values fill the first columns, as in
		// Postgres; the rest are NULL.
		for i := range cols {
			idx = append(idx, i)
		}
		if len(st.Rows) > 0 && len(st.Rows[0]) > len(cols) {
			return pgerr.New(pgerr.SyntaxError, "INSERT has more expressions than target columns").
				WithPosition(st.Rows[0][len(cols)].Position())
		}
		if len(st.Rows) > 0 {
			idx = idx[:len(st.Rows[0])]
		}
	} else {
		seen := map[int]bool{}
		for n, c := range st.Columns {
			pos := 0
			if n < len(st.ColumnPos) {
				pos = st.ColumnPos[n]
			}
			i := rel.Schema.Index(c)
			if i < 0 {
				return pgerr.New(pgerr.UndefinedColumn, "column %q of relation %q does not exist", c, rel.Name).WithPosition(pos)
			}
			if seen[i] {
				return pgerr.New(pgerr.DuplicateColumn, "column %q specified more than once", c).WithPosition(pos)
			}
			if rel.Schema.Columns[i].FromHeaders() {
				return pgerr.New(pgerr.FeatureNotSupported, "column %q of %s is read from the records' headers, which INSERT does not write", c, rel.Name).WithPosition(pos).
					WithHint("Leave it out of the column list.")
			}
			seen[i] = true
			idx = append(idx, i)
		}
	}
	codec := serde.NewCodec(rel, s.e.Runtime.Registry())
	part := rel.PartitionerOf()
	env := s.env()
	recs := make([]*kgo.Record, 0, len(st.Rows))
	for _, vals := range st.Rows {
		if len(vals) < len(idx) {
			pos := 0
			if len(vals) < len(st.ColumnPos) {
				pos = st.ColumnPos[len(vals)]
			}
			return pgerr.New(pgerr.SyntaxError, "INSERT has more target columns than expressions").WithPosition(pos)
		}
		row := make(catalog.Row, len(cols))
		for j, e := range vals {
			c := cols[idx[j]]
			v, err := eval.EvalColumnValue(e, c, env)
			if err != nil {
				return err
			}
			row[idx[j]] = v
		}
		for _, k := range codec.KeyIndex() {
			if row[k] == nil && rel.Kind == catalog.KindTable {
				return pgerr.New(pgerr.NotNullViolation, "null value in column %q of relation %q violates not-null constraint", cols[k].Name, rel.Name).
					WithDetail("%s is the key of table %s.", cols[k].Name, rel.Name)
			}
		}
		key, value, err := codec.Encode(row)
		if err != nil {
			return err
		}
		p := int32(s.e.rrCount.Add(1) % uint32(rel.Partitions))
		if key != nil {
			p = part.Partition(key, rel.Partitions)
		}
		recs = append(recs, &kgo.Record{Topic: rel.Topic, Partition: p, Key: key, Value: value})
	}
	started := time.Now()
	if err := s.e.Producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return s.e.produceError(rel.Topic, started, err)
	}
	wrote := materialize.Position{}
	for _, r := range recs {
		wrote.Advance(r.Topic, r.Partition, r.Offset+1)
	}
	s.noteWrites(wrote)
	if st.ReturnPosition {
		if err := w.Columns(positionColumns); err != nil {
			return err
		}
		if err := w.Row([]any{wrote.String()}); err != nil {
			return err
		}
	}
	return w.Complete(fmt.Sprintf("INSERT 0 %d", len(recs)))
}

func (s *Session) createSource(ctx context.Context, st *sql.CreateSource, text string, w ResultWriter) error {
	tag := "CREATE " + st.Kind.String()
	if err := s.e.Log.Sync(ctx); err != nil {
		return err
	}
	if _, ok := s.e.Catalog.Lookup(st.Name); ok && st.IfNotExists {
		_ = w.Notice(&pgerr.Error{Severity: "NOTICE", Code: pgerr.DuplicateTable, Message: fmt.Sprintf("relation %q already exists, skipping", st.Name)})
		return w.Complete(tag)
	}
	if err := s.inferColumns(ctx, st); err != nil {
		return err
	}
	rel, err := planner.PlanCreateSource(s.e.Catalog, st, text)
	if err != nil {
		return err
	}
	if err := s.checkRegistry(rel); err != nil {
		return err
	}
	want := rel.Partitions
	if want == 0 {
		want = s.e.DefaultPartitions
	}
	var configs map[string]*string
	if rel.Kind == catalog.KindTable {
		// A table's topic is its changelog: compaction keeps the latest
		// value of every key, where time-based deletion would lose keys.
		compact := "compact"
		configs = map[string]*string{"cleanup.policy": &compact}
	}
	created, actual, err := kafka.EnsureTopic(ctx, s.e.Runtime.Admin(), rel.Topic, want, configs)
	if err != nil {
		return pgerr.New(pgerr.IOError, "creating topic %s: %v", rel.Topic, err)
	}
	if !created && rel.Partitions != 0 && actual != rel.Partitions {
		return pgerr.New(pgerr.InvalidParameterValue, "topic %s has %d partitions, not %d", rel.Topic, actual, rel.Partitions).
			WithHint("Leave out partitions to use the topic as it is.")
	}
	rel.Partitions = actual
	var target materialize.Position
	if rel.Kind == catalog.KindTable {
		if target, err = s.e.Runtime.SourceEnds(ctx, rel.Topic); err != nil {
			return pgerr.New(pgerr.IOError, "reading the end offsets of %s: %v", rel.Topic, err)
		}
	}
	if err := s.submit(ctx, &catalog.Command{Op: catalog.OpCreate, Relation: rel}, "", nil); err != nil {
		return err
	}
	if rel.Kind == catalog.KindTable {
		// A table is materialized: it serves reads once its replicas
		// hold what its topic held (serving.go).
		if err := s.waitServing(ctx, rel.Name, target, w); err != nil {
			return err
		}
	}
	return w.Complete(tag)
}

func (s *Session) createView(ctx context.Context, st *sql.CreateTableAs, text string, w ResultWriter) error {
	if done, err := s.createExisting(ctx, st.Name, st.IfNotExists, "CREATE TABLE", w); done || err != nil {
		return err
	}
	plan, err := planner.PlanView(s.e.Catalog, st, text)
	if err != nil {
		return err
	}
	// A view of a stream's join has its positions in the joined stream
	// its join stages write, which starts empty: it waits for nothing.
	topics := slices.DeleteFunc(plan.PositionTopics(), func(t string) bool { return t == "" })
	target, err := s.e.Runtime.SourceEnds(ctx, topics...)
	if err != nil {
		return pgerr.New(pgerr.IOError, "reading the end offsets of %s: %v", strings.Join(topics, ", "), err)
	}
	// A topic to publish to that cannot be used, or a schema the
	// registry refuses, fails the statement before the view exists.
	if err := s.e.Runtime.EnsurePublished(ctx, plan.View, nil); err != nil {
		return err
	}
	if err := s.pinKeySchema(ctx, plan); err != nil {
		return err
	}
	if err := s.checkRegistry(plan.View); err != nil {
		return err
	}
	if err := s.submit(ctx, &catalog.Command{Op: catalog.OpCreate, Relation: plan.View}, "", nil); err != nil {
		return err
	}
	if err := s.waitServing(ctx, st.Name, target, w); err != nil {
		return err
	}
	return w.Complete("CREATE TABLE")
}

// insertSelect runs INSERT INTO stream SELECT ...: it starts a
// persistent query, INSERTQUERY_<n>, that writes the records of the
// SELECT into the stream as they come, until TERMINATE. The tag is
// INSERT 0 0 (the records follow), with a NOTICE naming the query.
func (s *Session) insertSelect(ctx context.Context, st *sql.InsertSelect, text string, w ResultWriter) error {
	for try := 0; ; try++ {
		if err := s.e.Log.Sync(ctx); err != nil {
			return err
		}
		n := 1
		for s.e.Catalog.Taken(fmt.Sprintf("insertquery_%d", n)) {
			n++
		}
		plan, err := planner.PlanInsertSelect(s.e.Catalog, st, fmt.Sprintf("insertquery_%d", n), text)
		if err != nil {
			return err
		}
		err = s.submit(ctx, &catalog.Command{Op: catalog.OpCreate, Relation: plan.Stream}, "", nil)
		if pgerr.CodeOf(err) == pgerr.DuplicateTable && try < 10 {
			continue // another session took the id first
		}
		if err != nil {
			return err
		}
		_ = w.Notice(&pgerr.Error{Severity: "NOTICE", Code: pgerr.SuccessfulCompletion,
			Message: fmt.Sprintf("query %s writes the records of the SELECT into %s as they come; TERMINATE %s stops it", plan.Stream.QueryName(), plan.Stream.Into, plan.Stream.QueryName())})
		return w.Complete("INSERT 0 0")
	}
}

// terminate runs TERMINATE query_id: an INSERT ... SELECT query stops
// and is removed; what it wrote stays in its stream.
func (s *Session) terminate(ctx context.Context, st *sql.Terminate, w ResultWriter) error {
	if err := s.e.Log.Sync(ctx); err != nil {
		return err
	}
	rel, ok := s.e.Catalog.LookupQuery(st.Query)
	switch {
	case !ok:
		return pgerr.New(pgerr.UndefinedObject, "query %q does not exist", strings.ToUpper(st.Query)).
			WithHint("SHOW QUERIES lists the queries and their ids.")
	case rel.Kind != catalog.KindInsert:
		what := "DROP TABLE"
		if rel.Kind == catalog.KindStream {
			what = "DROP STREAM"
		}
		return pgerr.New(pgerr.FeatureNotSupported, "query %s keeps %s %s, and stops only with it", rel.QueryName(), strings.ToLower(string(rel.Kind)), rel.Name).
			WithHint("%s %s stops the query and drops the relation.", what, sql.QuoteIdent(rel.Name))
	}
	return s.submit(ctx, &catalog.Command{Op: catalog.OpDrop, Name: rel.Name}, "TERMINATE", w)
}

// createExisting catches up with the catalog and handles a CREATE ... AS
// of a relation name that exists: 42P07, or with IF NOT EXISTS a NOTICE
// and the statement's tag (done).
func (s *Session) createExisting(ctx context.Context, name string, ifNotExists bool, tag string, w ResultWriter) (done bool, err error) {
	if err := s.e.Log.Sync(ctx); err != nil {
		return false, err
	}
	if _, ok := s.e.Catalog.Lookup(name); !ok {
		return false, nil
	}
	if !ifNotExists {
		return false, pgerr.New(pgerr.DuplicateTable, "relation %q already exists", name)
	}
	_ = w.Notice(&pgerr.Error{Severity: "NOTICE", Code: pgerr.DuplicateTable, Message: fmt.Sprintf("relation %q already exists, skipping", name)})
	return true, w.Complete(tag)
}

// createStream runs CREATE STREAM ... AS SELECT: the stream's topic is
// made (or found with its partition count) before the stream exists,
// and the statement returns once the command is applied; the records
// follow as the query writes them.
func (s *Session) createStream(ctx context.Context, st *sql.CreateStreamAs, text string, w ResultWriter) error {
	if done, err := s.createExisting(ctx, st.Name, st.IfNotExists, "CREATE STREAM", w); done || err != nil {
		return err
	}
	plan, err := planner.PlanStream(s.e.Catalog, st, text)
	if err != nil {
		return err
	}
	if err := s.checkRegistry(plan.Stream); err != nil {
		return err
	}
	for _, r := range s.e.Catalog.List(catalog.KindStream, catalog.KindTable) {
		if strings.EqualFold(r.Topic, plan.Stream.Topic) {
			return pgerr.New(pgerr.InvalidObjectDefinition, "stream %s cannot write to topic %s: %s %s reads it", st.Name, plan.Stream.Topic, strings.ToLower(string(r.Kind)), r.Name).
				WithHint("Name a topic no stream or table is declared over in kafka_topic.")
		}
	}
	if err := s.e.Runtime.EnsureStreamTopic(ctx, plan.Stream, nil); err != nil {
		return err
	}
	return s.submit(ctx, &catalog.Command{Op: catalog.OpCreate, Relation: plan.Stream}, "CREATE STREAM", w)
}

// waitServing returns once every partition of the relation just created
// has a replica serving reads that reflects its source as it was before
// (target), on this node or another (serving.go); a NOTICE says which
// partitions are still catching up when the wait ends with them serving.
func (s *Session) waitServing(ctx context.Context, name string, target materialize.Position, w ResultWriter) error {
	notice, err := s.e.Runtime.WaitServing(ctx, name, target)
	if err != nil {
		return err
	}
	if notice != "" {
		_ = w.Notice(&pgerr.Error{Severity: "NOTICE", Code: pgerr.SuccessfulCompletion, Message: notice})
	}
	return nil
}

func (s *Session) submit(ctx context.Context, cmd *catalog.Command, tag string, w ResultWriter) error {
	ch, err := s.e.Log.Submit(ctx, cmd)
	if err != nil {
		return pgerr.New(pgerr.IOError, "appending to the command topic: %v", err)
	}
	if ch.Err != nil {
		return ch.Err
	}
	if w == nil {
		return nil
	}
	return w.Complete(tag)
}

func (s *Session) drop(ctx context.Context, st *sql.Drop, w ResultWriter) error {
	tag := "DROP " + st.Kind.String()
	if err := s.e.Log.Sync(ctx); err != nil {
		return err
	}
	rel, ok := s.e.Catalog.Lookup(st.Name)
	if !ok {
		if st.IfExists {
			_ = w.Notice(&pgerr.Error{Severity: "NOTICE", Code: pgerr.UndefinedTable, Message: fmt.Sprintf("%s %q does not exist, skipping", strings.ToLower(st.Kind.String()), st.Name)})
			return w.Complete(tag)
		}
		return pgerr.New(pgerr.UndefinedTable, "%s %q does not exist", strings.ToLower(st.Kind.String()), st.Name)
	}
	isStream := rel.Kind == catalog.KindStream
	if isStream != (st.Kind == sql.KindStream) {
		what := "a table"
		if isStream {
			what = "a stream"
		}
		return pgerr.New(pgerr.WrongObjectType, "%q is %s", rel.Name, what).
			WithHint("Use DROP %s.", map[bool]string{true: "STREAM", false: "TABLE"}[isStream])
	}
	if deps := s.e.Catalog.Dependents(rel.Name); len(deps) > 0 {
		return catalog.DependentsError(rel, deps)
	}
	return s.submit(ctx, &catalog.Command{Op: catalog.OpDrop, Name: rel.Name}, tag, w)
}

// resume runs RESUME query_id: the query's tasks that its lost input
// stopped continue where the topic ended when the loss was found
// (halts.go); a NOTICE per stopped partition says what the view goes on
// counting without.
func (s *Session) resume(ctx context.Context, st *sql.Resume, w ResultWriter) error {
	if err := s.e.Log.Sync(ctx); err != nil {
		return err
	}
	var rel *catalog.Relation
	for _, r := range s.e.Catalog.Queries() {
		if strings.EqualFold(r.QueryName(), st.Query) {
			rel = r
		}
	}
	if rel == nil {
		return pgerr.New(pgerr.UndefinedObject, "query %q does not exist", strings.ToUpper(st.Query)).
			WithHint("SHOW QUERIES lists the queries and their ids.")
	}
	var waiting []catalog.Halt
	for _, h := range rel.Halts {
		if h.Resumed == 0 {
			waiting = append(waiting, h)
		}
	}
	if len(waiting) == 0 {
		return pgerr.New(pgerr.ObjectNotInPrerequisiteState, "query %s is not stopped by lost input; nothing to resume", rel.QueryName()).
			WithHint("RESUME continues a query that stopped because its source topic lost records (SHOW QUERIES says ERROR, \"input topic truncated\").")
	}
	if q, ok := s.e.Runtime.Query(rel.Name); ok && q.Plan != nil && q.Plan.Repartition {
		return pgerr.New(pgerr.FeatureNotSupported, "view %s re-keys its source (GROUP BY other than the source key) and cannot continue past lost input", rel.Name).
			WithHint("Rebuild it: DROP TABLE %s, then CREATE it again with the statement SHOW QUERIES shows.", sql.QuoteIdent(rel.Name))
	}
	if err := s.submit(ctx, &catalog.Command{Op: catalog.OpResume, Name: rel.Name}, "", nil); err != nil {
		return err
	}
	for _, h := range waiting {
		msg := fmt.Sprintf("%s %s continues topic %s partition %d at offset %d", strings.ToLower(string(rel.Kind)), rel.Name, h.Topic, h.Partition, min(h.End, h.Offset))
		if h.End < h.Offset {
			msg += fmt.Sprintf("; the %d records it had applied at offsets %d to %d, which the topic lost, stay reflected in its rows", h.Offset-h.End, h.End, h.Offset-1)
		}
		_ = w.Notice(&pgerr.Error{Severity: "NOTICE", Code: pgerr.SuccessfulCompletion, Message: msg})
	}
	return w.Complete("RESUME")
}

func (s *Session) show(ctx context.Context, st *sql.Show, w ResultWriter) error {
	switch st.What {
	case sql.ShowStreams:
		return s.listRelations(ctx, w, "SHOW", catalog.KindStream)
	case sql.ShowTables:
		return s.listRelations(ctx, w, "SHOW", catalog.KindTable, catalog.KindView)
	case sql.ShowQueries:
		return s.showQueries(ctx, w)
	case sql.ShowTasks:
		return s.showTasks(ctx, w)
	case sql.ShowCluster:
		return s.showCluster(ctx, w)
	}
	name := strings.ToLower(st.Name)
	switch name {
	case "basin.last_read":
		return s.showLastRead(w)
	case "basin.last_write_position":
		return s.showLastWritePosition(w)
	}
	if name == "all" {
		if err := w.Columns([]catalog.Column{{Name: "name", Type: catalog.Varchar}, {Name: "setting", Type: catalog.Varchar}}); err != nil {
			return err
		}
		names := make([]string, 0, len(s.vars))
		for k := range s.vars {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if err := w.Row([]any{k, s.vars[k]}); err != nil {
				return err
			}
		}
		return w.Complete("SHOW")
	}
	v, ok := s.vars[name]
	if !ok {
		v, ok = eval.ExtraSettings[name] // read-only server settings (server_version_num)
	}
	if !ok {
		return pgerr.New(pgerr.UndefinedObject, "unrecognized configuration parameter %q", st.Name)
	}
	if err := w.Columns([]catalog.Column{{Name: name, Type: catalog.Varchar}}); err != nil {
		return err
	}
	if err := w.Row([]any{v}); err != nil {
		return err
	}
	return w.Complete("SHOW")
}

// listRelations lists relations of kinds (SHOW STREAMS, SHOW TABLES).
// Tables and views also show their partitioner and how many misplaced
// records their active tasks have found (placement.go).
func (s *Session) listRelations(ctx context.Context, w ResultWriter, tag string, kinds ...catalog.Kind) error {
	cols := []catalog.Column{
		{Name: "name", Type: catalog.Varchar},
		{Name: "kind", Type: catalog.Varchar},
		{Name: "topic", Type: catalog.Varchar},
		{Name: "partitions", Type: catalog.Int},
		{Name: "key_format", Type: catalog.Varchar},
		{Name: "value_format", Type: catalog.Varchar},
		{Name: "partitioner", Type: catalog.Varchar},
	}
	materialized := !slices.Contains(kinds, catalog.KindStream)
	var misplaced map[string]int64
	if materialized {
		cols = append(cols, catalog.Column{Name: "misplaced", Type: catalog.BigInt})
		tasks, err := s.clusterTasks(ctx)
		if err != nil {
			return err
		}
		misplaced = misplacedByRelation(tasks)
	}
	if err := w.Columns(cols); err != nil {
		return err
	}
	for _, r := range s.e.Catalog.List(kinds...) {
		topic := r.Topic
		if r.Kind == catalog.KindView {
			topic = r.ChangelogTopic(s.e.Cluster)
		}
		row := []any{r.Name, string(r.Kind), topic, int64(r.Partitions), r.KeyFormat, r.ValueFormat, r.PartitionerOf().Name}
		if materialized {
			row = append(row, misplaced[strings.ToLower(r.Name)])
		}
		if err := w.Row(row); err != nil {
			return err
		}
	}
	return w.Complete(tag)
}

func (s *Session) showQueries(ctx context.Context, w ResultWriter) error {
	cols := []catalog.Column{
		{Name: "query_id", Type: catalog.Varchar},
		{Name: "sink", Type: catalog.Varchar},
		{Name: "sources", Type: catalog.Varchar},
		{Name: "status", Type: catalog.Varchar},
		{Name: "partitions", Type: catalog.Int},
		{Name: "errors", Type: catalog.BigInt},
		{Name: "last_error", Type: catalog.Varchar},
		{Name: "sql", Type: catalog.Varchar},
	}
	counts, err := s.processingLogCounts(ctx)
	if err != nil {
		return err
	}
	if err := w.Columns(cols); err != nil {
		return err
	}
	for _, r := range s.e.Catalog.Queries() {
		status, lastErr := "RUNNING", ""
		if q, ok := s.e.Runtime.Query(r.Name); ok {
			for _, t := range append(q.Tasks[:len(q.Tasks):len(q.Tasks)], q.Rekey...) {
				if e := t.LastError(); e != "" {
					status, lastErr = "ERROR", e
				} else if t.Role() == ha.RoleRestoring && status == "RUNNING" {
					status = "RESTORING"
				}
			}
		} else {
			status = "NOT RUNNING"
		}
		sources := r.Topic
		if r.Kind != catalog.KindTable {
			sources = strings.Join(r.Sources, ", ")
		}
		sink := r.Name
		if r.Kind == catalog.KindInsert {
			sink = r.Into
		}
		row := []any{r.QueryName(), sink, sources, status, int64(r.TaskPartitions()), counts[r.QueryName()], nullIfEmpty(lastErr), r.SQL}
		if err := w.Row(row); err != nil {
			return err
		}
	}
	return w.Complete("SHOW")
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// processingLogCounts counts the processing log's records per query.
func (s *Session) processingLogCounts(ctx context.Context) (map[string]int64, error) {
	counts := map[string]int64{}
	rel, ok := s.e.Catalog.Lookup(catalog.ProcessingLogName)
	if !ok {
		return counts, nil
	}
	plan, err := planner.PlanSelect(s.e.Catalog, &sql.Select{
		Items: []sql.SelectItem{{Expr: &sql.ColumnRef{Name: "query_id"}}},
		From:  []sql.FromItem{&sql.TableRef{Name: rel.Name}},
	})
	if err != nil {
		return nil, err
	}
	env, opts := s.statement()
	_, err = s.e.read(nil, ctx, plan, nil, env, opts, func(r catalog.Row) error {
		if q, ok := r[0].(string); ok {
			counts[q]++
		}
		return nil
	})
	return counts, err
}

func (s *Session) describe(st *sql.Describe, w ResultWriter) error {
	rel, err := s.e.Catalog.Resolve(st.Name)
	if err != nil {
		return err
	}
	cols := []catalog.Column{
		{Name: "column", Type: catalog.Varchar},
		{Name: "type", Type: catalog.Varchar},
		{Name: "key", Type: catalog.Boolean},
	}
	if err := w.Columns(cols); err != nil {
		return err
	}
	for _, c := range rel.Schema.Columns {
		if err := w.Row([]any{c.Name, c.TypeString(), c.Key}); err != nil {
			return err
		}
	}
	return w.Complete("DESCRIBE")
}

func (s *Session) explain(ctx context.Context, st *sql.Explain, w ResultWriter) error {
	if st.Analyze {
		return s.explainAnalyze(ctx, st, w)
	}
	var text string
	switch x := st.Stmt.(type) {
	case *sql.Select:
		plan, err := planner.PlanSelect(s.e.Catalog, x)
		if err != nil {
			return err
		}
		text = plan.String()
		env, opts := s.statement()
		routes, err := s.e.Reads.ExplainRoutes(plan, env, opts)
		if err != nil {
			routes = []string{"  Routing: decided when the statement runs (" + err.Error() + ")"}
		}
		text += strings.Join(routes, "\n")
	case *sql.CreateTableAs:
		plan, err := planner.PlanView(s.e.Catalog, x, "")
		if err != nil {
			return err
		}
		text = plan.String()
	case *sql.CreateStreamAs:
		plan, err := planner.PlanStream(s.e.Catalog, x, "")
		if err != nil {
			return err
		}
		text = plan.String()
	case *sql.InsertSelect:
		plan, err := planner.PlanInsertSelect(s.e.Catalog, x, "", "")
		if err != nil {
			return err
		}
		text = plan.String()
	default:
		return pgerr.New(pgerr.FeatureNotSupported, "EXPLAIN supports SELECT, CREATE TABLE AS, CREATE STREAM AS and INSERT ... SELECT")
	}
	if err := w.Columns([]catalog.Column{{Name: "QUERY PLAN", Type: catalog.Varchar}}); err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if err := w.Row([]any{line}); err != nil {
			return err
		}
	}
	return w.Complete("EXPLAIN")
}

// withPosition sets the position of a coded error that has none.
func withPosition(err error, pos int) error {
	if pe, ok := pgerr.As(err); ok && pe.Position == 0 {
		pe.WithPosition(pos)
	}
	return err
}
