package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/internal/backoff"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/internal/safe"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/serde"
)

// RuntimeOptions configure the persistent-query runtime of a node.
type RuntimeOptions struct {
	// Brokers are the Kafka seed brokers. Required.
	Brokers []string
	// ClientOpts are extra franz-go options every client gets (TLS, SASL).
	ClientOpts []kgo.Opt
	// Cluster names the basin cluster; internal topics carry it. Required.
	Cluster string
	// Node is this node's id. Required.
	Node string
	// DB holds the stores. Required.
	DB *materialize.DB
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// MaxBatch bounds the records one transaction processes. Default
	// 10000.
	MaxBatch int
	// TransactionTimeout is the Kafka transaction timeout of tasks: how
	// long a crashed task's open transaction blocks readers before the
	// broker aborts it. Default 10s.
	TransactionTimeout time.Duration
	// RecoveryLag is the offset lag within which a restoring replica
	// serves reads forwarded to it (the cluster's
	// acceptable.recovery.lag: a replica that close is caught up enough
	// to be given the active). Zero serves none.
	RecoveryLag int64
	// Halt records in the catalog that a task of the relation named found
	// its input partition lost records it had applied (halts.go); nil
	// records nothing (the task stops only while the loss shows).
	Halt func(ctx context.Context, relation string, h catalog.Halt) error
	// Registry is the schema registry of the registry formats (avro);
	// nil for none.
	Registry *serde.Registry
	// Freshness, when set, is told after each batch a task applies the
	// age of the oldest record the batch took in (its end-to-end
	// freshness: from the record's timestamp to its change being
	// readable here), with the task's relation and role.
	Freshness func(relation, role string, age time.Duration)
}

func (o *RuntimeOptions) ensureDefaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 10000
	}
	if o.TransactionTimeout <= 0 {
		o.TransactionTimeout = 10 * time.Second
	}
}

// Runtime runs the persistent queries of one node: a task per partition
// of each table and view, plus the re-keying stage of views that need
// one. Each task runs under a supervisor that restarts it from its
// checkpoint after a failure, with backoff. All goroutines are owned by
// the Runtime and joined by Close.
type Runtime struct {
	opts   RuntimeOptions
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	adm    *kadm.Client
	admCl  *kgo.Client
	plog   *kgo.Client // processing-log producer for non-transactional stages
	// restoreRecs is the memory restores decode changelog records into
	// (kafka.RecordPool), shared by them all.
	restoreRecs kafka.RecordPool

	mu struct {
		sync.Mutex
		queries map[string]*PersistentQuery // by lower-case relation name
		// roles are this node's tasks (SetRoles); until rolesSet, every
		// task is active.
		roles    Roles
		rolesSet bool
		// peers describes the replicas other nodes hold; nil on a node
		// alone.
		peers Peers
	}
	// restores counts the restores of stores from their changelogs.
	restores restoreCounts
	// recentBad is the last records this node's tasks wrote to the
	// processing log (plog.go).
	recentBad recentBad
	// plogCounts counts them by relation and reason.
	plogCounts plogCounts
	// pause notices that the process did not run for a while (pause.go).
	pause *pauseWatch
	// byStore is every started query by store name, for what its tasks
	// look up without the lock (halts.go): *PersistentQuery.
	byStore sync.Map
}

// PersistentQuery is one running persistent query: the tasks that
// maintain a view or materialize a table, for as long as the relation
// exists. It is not a pull query (pull.go, query.go), which a session
// runs once and forgets; the name keeps the two apart.
type PersistentQuery struct {
	Rel  *catalog.Relation
	Plan *planner.ViewPlan // nil for a table or a derived stream
	// Stream is a derived stream's plan; nil for a table or a view.
	Stream *planner.StreamPlan
	Tasks  []*TaskState // by partition (a derived stream's: by source partition)
	// Rekey are the re-keying tasks of a view, by source partition.
	Rekey  []*TaskState
	slots  []*slot // Tasks, then Rekey
	reg    *serde.Registry
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// The handles reads use, made once rather than per read.
	handlesOnce sync.Once
	codec       *serde.Codec
	stores      []*materialize.Store // by partition

	// halts are Rel's halts as the catalog has them now (Alter). Tasks
	// read them as they start, without the runtime's lock: the lock is
	// held while a role change waits for a task to stop (halts.go).
	halts atomic.Pointer[[]catalog.Halt]
}

// Handles returns the relation's record codec and its stores' handles.
func (q *PersistentQuery) Handles(db *materialize.DB) (*serde.Codec, []*materialize.Store) {
	q.handlesOnce.Do(func() {
		q.codec = serde.NewCodec(q.Rel, q.reg)
		name := q.Rel.StoreName()
		q.stores = make([]*materialize.Store, q.Rel.Partitions)
		for p := range q.stores {
			q.stores[p] = db.Store(materialize.StoreID{View: name, Partition: int32(p)})
		}
	})
	return q.codec, q.stores
}

// TaskState is the observable state of one task, read by pull queries
// and SHOW QUERIES. Its fields are safe for concurrent use.
type TaskState struct {
	Partition int32
	// inputNext and inputEnd are the task's read offset and the high
	// watermark of its input partition (summed over inputs), for offset
	// lag.
	inputNext atomic.Int64
	inputEnd  atomic.Int64
	// fwdNext and fwdEnd are the same for the task's forwarded input:
	// the records of its partition's keys that the tasks of the other
	// partitions found misplaced on theirs (see forwarder); zero for a
	// task without one.
	fwdNext atomic.Int64
	fwdEnd  atomic.Int64
	// sourceSeen is, for a task whose sources' ends are bySeen, how far
	// the task has seen each source partition (its change stage's
	// markers).
	sourceSeen atomic.Pointer[map[int32]int64]
	// misplaced counts the input records this task found on a partition
	// other than the one their key belongs to, since it started here.
	misplaced atomic.Int64
	// updatedAt is the timestamp (unix ms) of the last record applied.
	updatedAt atomic.Int64
	// pendingAt is the timestamp (unix ms) of the oldest input record
	// read but not yet reflected, while a batch is in flight; 0 between
	// batches.
	pendingAt atomic.Int64
	restored  atomic.Bool
	// pause is the runtime's pause watch (nil in tests without one).
	pause *pauseWatch
	// halted is set while the catalog holds a halt of the task's
	// partition the operator has not resumed (halts.go), on every
	// replica: its lag is then at least 1.
	halted atomic.Bool
	// position is the source position of the last commit; sources, for a
	// task behind a repartition topic, the source ends it is measured
	// against.
	position atomic.Pointer[published]
	sources  *sourceEnds
	// posCh is closed (and replaced) when position changes; readers
	// waiting for a position select on it.
	posMu     sync.Mutex
	posCh     chan struct{}
	ready     chan struct{} // closed once restored the first time
	readyOnce sync.Once
	role      atomic.Pointer[ha.Role] // on this node; nil is ha.RoleNone
	// changelogEnd is the end of the task's changelog as last seen.
	changelogEnd atomic.Int64
	errors       atomic.Int64 // records skipped since start
	// recordsIn and bytesIn count the records (keys and values) the
	// task has taken in since this node made it (tookIn); recordsOut and
	// bytesOut those it wrote (wrote), committed and aborted its
	// transactions.
	recordsIn, bytesIn   atomic.Int64
	recordsOut, bytesOut atomic.Int64
	committed, aborted   atomic.Int64
	// takenAt is the timestamp (unix ms) of the oldest record taken in
	// and not yet applied (tookIn, applied), for freshness; 0 when none.
	takenAt atomic.Int64
	// relation names the task's relation, and fresh is the runtime's
	// RuntimeOptions.Freshness (nil for none).
	relation string
	fresh    func(relation, role string, age time.Duration)
	mu       struct {
		sync.Mutex
		lastErr string
	}
}

// Lag returns the offset lag (source records not yet reflected) and the
// time lag in milliseconds at now. A task that reads its source directly
// measures its own input; a task behind a repartition topic measures its
// position against the source ends the re-keying tasks see, so records
// not yet re-keyed count too.
//
// The time lag bounds how stale the replica is: it is the age of the
// oldest input record not yet reflected, everything older being
// reflected. While a batch is in flight that record is the batch's
// first; between batches it is the next record to read, which is no
// older than the last one applied (records are timestamped as they are
// produced), so the age of the last applied record bounds it. A replica
// that is behind and has applied nothing yet, and read nothing, does not
// know the age of what it lacks: its time lag is then the time since the
// epoch, which no acceptable_time_lag admits, rather than 0, which every
// one would.
func (t *TaskState) Lag(now time.Time) (offsetLag, timeLagMs int64) {
	if t.sources != nil {
		pos := t.Position()
		var bySeen map[int32]int64
		if p := t.sourceSeen.Load(); t.sources.bySeen && p != nil {
			bySeen = *p
		}
		for sp := range t.sources.ends {
			seen, _ := pos.Get(t.sources.topic, int32(sp))
			if t.sources.bySeen {
				seen = bySeen[int32(sp)]
			}
			if d := t.sources.ends[sp].Load() - seen; d > 0 {
				offsetLag += d
			}
		}
	} else {
		offsetLag = max(0, t.inputEnd.Load()-t.inputNext.Load()) + max(0, t.fwdEnd.Load()-t.fwdNext.Load())
	}
	if (!t.restored.Load() || t.halted.Load()) && offsetLag == 0 {
		offsetLag = 1 // restoring, or stopped by lost input: not known to be current
	}
	if offsetLag > 0 {
		oldest := t.pendingAt.Load()
		if oldest <= 0 {
			oldest = t.updatedAt.Load()
		}
		timeLagMs = max(0, now.UnixMilli()-max(oldest, 0))
	}
	if since, paused := t.pause.stale(now); paused {
		// The process was paused: the ends it knows may be old.
		offsetLag = max(offsetLag, 1)
		timeLagMs = max(timeLagMs, now.Sub(since).Milliseconds())
	}
	return offsetLag, timeLagMs
}

// pending records, at the start of a batch, the timestamp of the
// oldest record fetches holds: the oldest not yet reflected.
func (t *TaskState) pending(fetches kgo.Fetches) {
	oldest := int64(0)
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		for _, r := range fp.Records {
			if r.Attrs.IsControl() {
				continue
			}
			if ms := r.Timestamp.UnixMilli(); ms > 0 && (oldest == 0 || ms < oldest) {
				oldest = ms
			}
			break // a partition's records are in order
		}
	})
	t.pendingAt.Store(oldest)
}

// applied records that a batch whose last record was timestamped at is
// reflected, and reports the freshness of the records taken in since
// the last batch: the age of the oldest of them.
func (t *TaskState) applied(at time.Time) {
	if !at.IsZero() && at.UnixMilli() > 0 {
		t.updatedAt.Store(at.UnixMilli())
	}
	t.pendingAt.Store(0)
	if taken := t.takenAt.Swap(0); taken > 0 && t.fresh != nil {
		t.fresh(t.relation, t.heldRole().String(), time.Since(time.UnixMilli(taken)))
	}
}

// sourceEnds holds the end offsets of a view's source partitions as the
// re-keying tasks last saw them.
type sourceEnds struct {
	topic string
	ends  []atomic.Int64
	// bySeen is set when the tasks' positions are not in topic's
	// offsets (a view regrouping a view or a join, whose source is a
	// changelog): their lag is then against TaskState.sourceSeen.
	bySeen bool
}

// publishPosition records the position of the last commit and wakes the
// readers waiting for one.
func (t *TaskState) publishPosition(p materialize.Position) {
	text := p.String()
	t.position.Store(&published{pos: p, text: text})
	t.posMu.Lock()
	defer t.posMu.Unlock()
	if t.posCh != nil {
		close(t.posCh)
		t.posCh = nil
	}
}

// PositionChanged returns a channel closed at the next publishPosition.
func (t *TaskState) PositionChanged() <-chan struct{} {
	t.posMu.Lock()
	defer t.posMu.Unlock()
	if t.posCh == nil {
		t.posCh = make(chan struct{})
	}
	return t.posCh
}

// published is a position a task published, with its token made once
// per commit rather than per read.
type published struct {
	pos  materialize.Position
	text string
}

// PositionAndToken returns the last published position and its token,
// as one publication, and false before the first.
func (t *TaskState) PositionAndToken() (materialize.Position, string, bool) {
	if p := t.position.Load(); p != nil {
		return p.pos, p.text, true
	}
	return nil, "", false
}

// Position returns the source position of the task's last commit.
func (t *TaskState) Position() materialize.Position {
	if p := t.position.Load(); p != nil {
		return p.pos
	}
	return nil
}

func newTaskState(p int32) *TaskState {
	return &TaskState{Partition: p, ready: make(chan struct{})}
}

// newTaskState returns the state of a task of partition p of relation
// rel, its lag watched for pauses and its freshness reported.
func (rt *Runtime) newTaskState(rel *catalog.Relation, p int32) *TaskState {
	ts := newTaskState(p)
	ts.pause = rt.pause
	ts.relation, ts.fresh = rel.Name, rt.opts.Freshness
	return ts
}

// markRestored records that the task's store has caught up with its
// changelog and the task is processing input.
func (t *TaskState) markRestored() {
	t.setError(nil)
	t.restored.Store(true)
	t.readyOnce.Do(func() { close(t.ready) })
}

// Role is the task's role on this node as reads report it:
// ha.RoleActive once an active task has restored its store,
// ha.RoleRestoring before; ha.RoleStandby, ha.RoleWarmup, or ha.RoleNone
// when another node holds it.
func (t *TaskState) Role() ha.Role {
	r := t.heldRole()
	if r == ha.RoleActive && !t.restored.Load() {
		return ha.RoleRestoring
	}
	return r
}

// heldRole is the role this node runs the task in.
func (t *TaskState) heldRole() ha.Role {
	if r := t.role.Load(); r != nil {
		return *r
	}
	return ha.RoleNone
}

// Restored reports whether the replica has caught up with its changelog
// since it was last started.
func (t *TaskState) Restored() bool { return t.restored.Load() }

// Held reports whether this node runs the task in some role.
func (t *TaskState) Held() bool { return t.heldRole() != ha.RoleNone }

// resetForRole prepares the state for the task to start in role: it is
// not restored until the new run says so.
func (t *TaskState) resetForRole(r ha.Role) {
	t.restored.Store(false)
	t.role.Store(&r)
}

// LastError is the last error that restarted the task, "" if none.
func (t *TaskState) LastError() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.lastErr
}

func (t *TaskState) setError(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil {
		t.mu.lastErr = ""
	} else {
		t.mu.lastErr = err.Error()
	}
}

// NewRuntime returns a runtime; Close stops every task.
func NewRuntime(opts RuntimeOptions) (*Runtime, error) {
	opts.ensureDefaults()
	if len(opts.Brokers) == 0 || opts.Cluster == "" || opts.Node == "" || opts.DB == nil {
		return nil, errors.New("exec: runtime needs brokers, a cluster, a node id and a DB")
	}
	rt := &Runtime{opts: opts, log: opts.Logger.With("component", "runtime")}
	rt.mu.queries = make(map[string]*PersistentQuery)
	rt.ctx, rt.cancel = context.WithCancel(context.Background())
	rt.pause = newPauseWatch(time.Now())
	var err error
	if rt.admCl, err = rt.Client("admin"); err != nil {
		return nil, err
	}
	rt.adm = kadm.NewClient(rt.admCl)
	if rt.plog, err = rt.Client("plog", kafka.ProducerOpts()...); err != nil {
		rt.admCl.Close()
		return nil, err
	}
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		rt.pause.run(rt.ctx)
	}()
	return rt, nil
}

// Node is this node's id.
func (rt *Runtime) Node() string { return rt.opts.Node }

// DB is the Pebble database of the node's stores.
func (rt *Runtime) DB() *materialize.DB { return rt.opts.DB }

// RecoveryLag is how far behind a restoring replica may be and still
// serve a read forwarded to it (RuntimeOptions.RecoveryLag).
func (rt *Runtime) RecoveryLag() int64 { return rt.opts.RecoveryLag }

// Client returns a Kafka client of the runtime's brokers, with client id
// id under the node's and extra options.
func (rt *Runtime) Client(id string, extra ...kgo.Opt) (*kgo.Client, error) {
	return kafka.NewClient(kafka.ClientOptions{
		Brokers:  rt.opts.Brokers,
		ClientID: "basin-" + rt.opts.Node + "-" + id,
		Logger:   rt.opts.Logger,
	}, append(append([]kgo.Opt{}, rt.opts.ClientOpts...), extra...)...)
}

// Admin returns the runtime's admin client.
func (rt *Runtime) Admin() *kadm.Client { return rt.adm }

// Close stops every task and waits for them.
func (rt *Runtime) Close() {
	rt.cancel()
	rt.wg.Wait()
	rt.plog.Close()
	rt.admCl.Close()
}

// Query returns the running query of a relation.
func (rt *Runtime) Query(name string) (*PersistentQuery, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	q, ok := rt.mu.queries[strings.ToLower(name)]
	return q, ok
}

// Queries returns the running queries.
func (rt *Runtime) Queries() []*PersistentQuery {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]*PersistentQuery, 0, len(rt.mu.queries))
	for _, q := range rt.mu.queries {
		out = append(out, q)
	}
	return out
}

// StartTable starts materializing a source table: a task per partition
// reads the table's topic into the table's stores. The topic itself is
// the changelog, so a standby does what an active does.
func (rt *Runtime) StartTable(rel *catalog.Relation) error {
	ctx, cancel := context.WithTimeout(rt.ctx, 30*time.Second)
	defer cancel()
	fwd := rel.RepartitionTopic(rt.opts.Cluster) // misplaced records (placement.go)
	maxBytes, err := rt.sourceMaxBytes(ctx, rel.Topic)
	if err != nil {
		return err
	}
	if _, _, err := kafka.EnsureTopic(ctx, rt.adm, fwd, rel.Partitions,
		map[string]*string{"max.message.bytes": maxBytes}); err != nil {
		return err
	}
	limit, err := rt.recordLimit(ctx, fwd)
	if err != nil {
		return err
	}
	q := &PersistentQuery{Rel: rel, reg: rt.opts.Registry}
	for p := int32(0); p < rel.Partitions; p++ {
		ts := rt.newTaskState(rel, p)
		q.Tasks = append(q.Tasks, ts)
		t := &tableTask{rt: rt, rel: rel, state: ts, fwd: fwd, maxRecord: limit}
		q.slots = append(q.slots, &slot{key: materialize.StoreID{View: rel.StoreName(), Partition: p}, ts: ts,
			name: fmt.Sprintf("%s/%d", rel.Name, p),
			run: func(r ha.Role) func(context.Context) error {
				return func(ctx context.Context) error { return rt.stalled(ctx, rel, ts, t.run(ctx, r == ha.RoleActive)) }
			}})
	}
	return rt.start(q)
}

// sourceMaxBytes returns the max.message.bytes the internal topics of a
// relation over source are created with: the source's own, so that what
// the source took, its changelog and repartition topics take too (as far
// as compression allows: see recordLimit).
func (rt *Runtime) sourceMaxBytes(ctx context.Context, source string) (*string, error) {
	n, err := kafka.MaxMessageBytes(ctx, rt.adm, source)
	if err != nil {
		return nil, fmt.Errorf("reading max.message.bytes of %s: %w", source, err)
	}
	v := strconv.Itoa(max(n, kafka.DefaultMaxMessageBytes))
	return &v, nil
}

// recordLimit returns the largest record the tasks of a relation write
// to its internal topics, the least max.message.bytes among them (a
// topic created by an older basin keeps its own). The producers bound a
// batch before compression by it (kgo.ProducerBatchMaxBytes), so the
// broker never refuses one; a record above it, which its source could
// hold only compressed, is logged to the processing log and skipped.
func (rt *Runtime) recordLimit(ctx context.Context, topics ...string) (int, error) {
	limit := 0
	for _, topic := range topics {
		n, err := kafka.MaxMessageBytes(ctx, rt.adm, topic)
		if err != nil {
			return 0, fmt.Errorf("reading max.message.bytes of %s: %w", topic, err)
		}
		if limit == 0 || n < limit {
			limit = n
		}
	}
	return limit, nil
}

// StartView starts a view's persistent query: its internal topics are
// created if missing, then a task per view partition and, when the view
// re-keys, a re-keying task per source partition. An active view task
// processes input; a standby or warm-up follows the changelog.
func (rt *Runtime) StartView(plan *planner.ViewPlan) error {
	rel := plan.View
	ctx, cancel := context.WithTimeout(rt.ctx, 30*time.Second)
	defer cancel()
	compact := "compact"
	// A view of a stream's join reads the joined stream its join stages
	// write (named after the view, as a derived stream's are); its
	// positions are in the topics beneath the join (planner.Marks).
	type stageLimit struct {
		limit    int
		maxBytes *string
	}
	var stageLimits []stageLimit
	for i, st := range plan.Stages {
		st.Stream.Name, st.Stream.Version = rel.StageName(i+1), rel.Version
		st.Stream.Topic = st.Stream.StageTopic(rt.opts.Cluster)
	}
	// A join of three or more tables or views: each stage but the last
	// writes its joined rows to a changelog named after the view, as a
	// derived stream's stages are, which the next stage reads.
	var chain []*planner.TableJoin
	if plan.Join != nil {
		chain = plan.Join.Chain()
		for i, js := range chain[:len(chain)-1] {
			js.Joined.Name, js.Joined.Version = rel.StageName(i+1), rel.Version
		}
	}
	for _, st := range plan.Stages {
		limit, maxBytes, err := rt.ensureStreamTopics(ctx, st)
		if err != nil {
			return err
		}
		stageLimits = append(stageLimits, stageLimit{limit, maxBytes})
	}
	input := plan.Source.Topic
	if plan.Source.Kind == catalog.KindView {
		input = plan.Source.ChangelogTopic(rt.opts.Cluster)
	}
	maxFrom := input
	if plan.Join != nil {
		input, maxFrom = rel.ChangesTopic(rt.opts.Cluster), joinInput(rt, chain[0], 0)
	}
	maxBytes, err := rt.sourceMaxBytes(ctx, maxFrom)
	if err != nil {
		return err
	}
	for i, js := range chain {
		// A joined row holds a row of each side.
		right, err := rt.sourceMaxBytes(ctx, joinInput(rt, js, 1))
		if err != nil {
			return err
		}
		l, _ := strconv.Atoi(*maxBytes)
		r, _ := strconv.Atoi(*right)
		sum := strconv.Itoa(l + r)
		maxBytes = &sum
		if i < len(chain)-1 {
			if _, _, err := kafka.EnsureTopic(ctx, rt.adm, js.Joined.ChangesTopic(rt.opts.Cluster), js.Joined.Partitions,
				map[string]*string{"cleanup.policy": &compact, "max.message.bytes": &sum}); err != nil {
				return err
			}
		}
	}
	if _, _, err := kafka.EnsureTopic(ctx, rt.adm, rel.ChangelogTopic(rt.opts.Cluster), rel.Partitions,
		map[string]*string{"cleanup.policy": &compact, "max.message.bytes": maxBytes}); err != nil {
		return err
	}
	if err := rt.EnsurePublished(ctx, rel, maxBytes); err != nil {
		return err
	}
	if plan.Retract && plan.Repartition && !plan.Regroups() || plan.Join != nil {
		if _, _, err := kafka.EnsureTopic(ctx, rt.adm, rel.ChangesTopic(rt.opts.Cluster), plan.Source.Partitions,
			map[string]*string{"cleanup.policy": &compact, "max.message.bytes": maxBytes}); err != nil {
			return err
		}
	}
	if plan.Regroups() {
		if _, _, err := kafka.EnsureTopic(ctx, rt.adm, rel.RegroupTopic(rt.opts.Cluster), plan.Source.Partitions,
			map[string]*string{"cleanup.policy": &compact, "max.message.bytes": maxBytes}); err != nil {
			return err
		}
	}
	// The repartition topic carries every record of a view that
	// re-keys, and only the misplaced records of one that does not
	// (placement.go).
	if _, _, err := kafka.EnsureTopic(ctx, rt.adm, rel.RepartitionTopic(rt.opts.Cluster), rel.Partitions,
		map[string]*string{"max.message.bytes": maxBytes}); err != nil {
		return err
	}
	limit, err := rt.recordLimit(ctx, rel.ChangelogTopic(rt.opts.Cluster), rel.RepartitionTopic(rt.opts.Cluster))
	if err != nil {
		return err
	}
	q := &PersistentQuery{Rel: rel, Plan: plan, reg: rt.opts.Registry}
	for i, st := range plan.Stages {
		var err error
		if st.Join.Within != nil {
			err = rt.startStreamJoin(ctx, q, st, i+1, stageLimits[i].limit)
		} else {
			err = rt.startJoin(ctx, q, st, i+1, stageLimits[i].limit, stageLimits[i].maxBytes)
		}
		if err != nil {
			return err
		}
	}
	var ends *sourceEnds
	if plan.Repartition {
		input = rel.RepartitionTopic(rt.opts.Cluster)
		ends = &sourceEnds{topic: plan.Source.Topic, ends: make([]atomic.Int64, plan.Source.Partitions)}
		if plan.Regroups() {
			ends.topic, ends.bySeen = regroupInput(rt, plan), true
		}
		for sp := int32(0); sp < plan.Source.Partitions; sp++ {
			ts := rt.newTaskState(rel, sp)
			q.Rekey = append(q.Rekey, ts)
			var run func(context.Context) error
			if plan.Retract {
				t := newChangeTask(rt, plan, ts, ends)
				t.maxRecord = limit
				run = t.run
			} else {
				t := newRekeyTask(rt, plan, ts, ends)
				t.maxRecord = limit
				run = t.run
			}
			q.slots = append(q.slots, &slot{key: materialize.StoreID{View: rel.StoreName(), Partition: sp}, rekey: true, ts: ts,
				name: fmt.Sprintf("%s/rekey/%d", rel.Name, sp),
				run: func(r ha.Role) func(context.Context) error {
					if r != ha.RoleActive {
						// Re-keying keeps no state to stand by with; a
						// change stage restores its own on start.
						return nil
					}
					return func(ctx context.Context) error { return rt.stalled(ctx, rel, ts, run(ctx)) }
				}})
		}
	}
	for i, js := range chain {
		stage, out, sub := "join", rel.ChangesTopic(rt.opts.Cluster), plan
		if i < len(chain)-1 {
			stage, out = fmt.Sprintf("stage%d-join", i+1), js.Joined.ChangesTopic(rt.opts.Cluster)
			sub = &planner.ViewPlan{View: js.Joined, Source: js.Joined, Join: js}
		}
		joinLimit, err := rt.recordLimit(ctx, out)
		if err != nil {
			return err
		}
		rt.joinStage(q, sub, stage, joinLimit)
	}
	changelog := rel.ChangelogTopic(rt.opts.Cluster)
	fwd := ""
	if !plan.Repartition && plan.Source.Kind != catalog.KindView {
		fwd = rel.RepartitionTopic(rt.opts.Cluster)
	}
	for p := int32(0); p < rel.Partitions; p++ {
		ts := rt.newTaskState(rel, p)
		ts.sources = ends
		q.Tasks = append(q.Tasks, ts)
		t := newViewTask(rt, plan, ts)
		t.maxRecord = limit
		q.slots = append(q.slots, rt.changelogSlot(rel, ts, t.run, input, fwd))
	}
	if err := rt.start(q); err != nil {
		return err
	}
	rt.wg.Add(1)
	q.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		defer q.wg.Done()
		safe.Restart(q.ctx, rt.log, "panic refreshing a view's ends; restarting", endsInterval, func() {
			rt.refreshEnds(q, changelog, ends)
		})
	}()
	return nil
}

// joinStage adds the join stage of a view over a table join to q: a
// task per partition, active where the view's partition is active and
// a standby where it stands by, writing records of at most limit bytes.
func (rt *Runtime) joinStage(q *PersistentQuery, plan *planner.ViewPlan, stage string, limit int) {
	rel := q.Rel
	for p := int32(0); p < plan.Source.Partitions; p++ {
		ts := rt.newTaskState(rel, p)
		q.Rekey = append(q.Rekey, ts)
		t := newTableJoinTask(rt, plan, ts)
		t.maxRecord = limit
		q.slots = append(q.slots, &slot{key: materialize.StoreID{View: rel.StoreName(), Partition: p}, rekey: true, stage: stage, ts: ts,
			name: fmt.Sprintf("%s/%s/%d", rel.Name, stage, p),
			run: func(r ha.Role) func(context.Context) error {
				if r == ha.RoleActive {
					return func(ctx context.Context) error { return rt.stalled(ctx, rel, ts, t.run(ctx)) }
				}
				return t.standby
			}})
	}
}

// changelogSlot is the slot of task ts of rel, whose active runs active
// and writes rel's changelog, which a standby follows (reading input and
// fwd only for its lag).
func (rt *Runtime) changelogSlot(rel *catalog.Relation, ts *TaskState, active func(context.Context) error, input, fwd string) *slot {
	p := ts.Partition
	key := materialize.StoreID{View: rel.StoreName(), Partition: p}
	changelog := rel.ChangelogTopic(rt.opts.Cluster)
	return &slot{key: key, ts: ts, name: fmt.Sprintf("%s/%d", rel.Name, p),
		run: func(r ha.Role) func(context.Context) error {
			if r == ha.RoleActive {
				return func(ctx context.Context) error { return rt.stalled(ctx, rel, ts, active(ctx)) }
			}
			return func(ctx context.Context) error {
				return rt.followChangelog(ctx, rt.opts.DB.Store(key), changelog, input, fwd, p, ts)
			}
		}}
}

// taskProducer returns the transactional producer of task p of rel,
// whose records are at most maxRecord bytes (0: no limit known), once it
// has fenced the task's earlier instances (fence).
func (rt *Runtime) taskProducer(ctx context.Context, rel *catalog.Relation, p int32, maxRecord int) (*kgo.Client, error) {
	return rt.fencedProducer(ctx, fmt.Sprintf("%s-%d-txn", rel.Name, p), rel.TransactionalID(rt.opts.Cluster, p),
		rel.ChangelogTopic(rt.opts.Cluster), p, maxRecord)
}

// fencedProducer returns the transactional producer named id with
// transactional id txnID, of a task that writes partition p of
// changelog, once it has fenced the task's earlier instances.
func (rt *Runtime) fencedProducer(ctx context.Context, id, txnID, changelog string, p int32, maxRecord int) (*kgo.Client, error) {
	prod, err := rt.Client(id, append(append(kafka.ProducerOpts(),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(rt.opts.TransactionTimeout),
	), batchMax(maxRecord)...)...)
	if err != nil {
		return nil, err
	}
	if err := fence(ctx, prod, changelog, p); err != nil {
		prod.Close()
		return nil, fmt.Errorf("fencing earlier instances of task %s: %w", id, err)
	}
	return prod, nil
}

// endsInterval is how often a view's changelog and source ends are read
// for the lag its replicas report.
const endsInterval = time.Second

// refreshEnds keeps a view's changelog ends and, for a re-keyed view, its
// source ends current while the query runs, for the lag of every replica
// here: the re-keying stages (which see source ends as they read) run
// only on the nodes holding the matching actives, and a standby writes no
// changelog.
func (rt *Runtime) refreshEnds(q *PersistentQuery, changelog string, src *sourceEnds) {
	t := time.NewTicker(endsInterval)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(q.ctx, endsInterval)
		if ends, err := kafka.EndOffsets(ctx, rt.adm, changelog); err == nil {
			for _, ts := range q.Tasks {
				storeMax(&ts.changelogEnd, ends[ts.Partition])
			}
		}
		if src != nil {
			if ends, err := kafka.EndOffsets(ctx, rt.adm, src.topic); err == nil {
				for sp := range src.ends {
					storeMax(&src.ends[sp], ends[int32(sp)])
				}
			}
		}
		cancel()
		select {
		case <-q.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// storeMax raises v to n.
func storeMax(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

func (rt *Runtime) start(q *PersistentQuery) error {
	name := strings.ToLower(q.Rel.Name)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.ctx.Err() != nil {
		return errors.New("exec: runtime closed")
	}
	if _, ok := rt.mu.queries[name]; ok {
		return fmt.Errorf("exec: query for %s already running", q.Rel.Name)
	}
	q.ctx, q.cancel = context.WithCancel(rt.ctx)
	q.setHalts(q.Rel.Halts)
	rt.byStore.Store(q.Rel.StoreName(), q)
	for _, s := range q.slots {
		s.role = ha.RoleNone // not started
	}
	rt.mu.queries[name] = q
	rt.reconcileLocked(q)
	return nil
}

// supervise runs a task until ctx ends, restarting it when it fails,
// after the wait its backoff gives (backoff.go). A restart resumes from
// the task's checkpoint. A panic in the task is a failure of the task,
// logged with its stack (runTask). done is closed when it has stopped.
func (rt *Runtime) supervise(ctx context.Context, q *PersistentQuery, name string, ts *TaskState, run func(context.Context) error, done chan struct{}) {
	rt.wg.Add(1)
	q.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		defer q.wg.Done()
		defer close(done)
		b := newBackoff()
		for {
			began := time.Now()
			err := runTask(ctx, run)
			if ctx.Err() != nil {
				return
			}
			ts.setError(err)
			wait := b.Failed(time.Since(began), rand.Float64())
			if safe.IsPanic(err) {
				safe.Log(rt.log, "task panicked; restarting from its checkpoint", err, "task", name, "backoff", wait)
			} else {
				rt.log.Warn("task failed; restarting from its checkpoint", "task", name, "err", err, "backoff", wait)
			}
			if backoff.Sleep(ctx, wait) != nil {
				return
			}
		}
	}()
}

// runTask runs one run of a task; a panic in it is its error, a
// *safe.PanicError.
func runTask(ctx context.Context, run func(context.Context) error) (err error) {
	defer safe.Recover(&err)
	safe.Fault(safe.FaultTask)
	return run(ctx)
}

// WaitReady waits until every task of the query this node holds has
// restored its store and is processing input.
func (q *PersistentQuery) WaitReady(ctx context.Context) error {
	for _, t := range q.Tasks {
		if !t.Held() {
			continue
		}
		select {
		case <-t.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Stop stops a relation's query and waits for its tasks.
func (rt *Runtime) Stop(name string) {
	rt.mu.Lock()
	q, ok := rt.mu.queries[strings.ToLower(name)]
	delete(rt.mu.queries, strings.ToLower(name))
	rt.mu.Unlock()
	if ok {
		q.cancel()
		q.wg.Wait()
		rt.byStore.CompareAndDelete(q.Rel.StoreName(), q)
	}
}

// Drop stops a relation's query and deletes its state: stores, internal
// topics and the re-keying group. The source topics stay.
func (rt *Runtime) Drop(ctx context.Context, rel *catalog.Relation) error {
	rt.mu.Lock()
	q := rt.mu.queries[strings.ToLower(rel.Name)]
	rt.mu.Unlock()
	rt.Stop(rel.Name)
	if !rel.HasQuery() {
		return nil
	}
	if err := rt.opts.DB.DropView(rel.StoreName()); err != nil {
		return err
	}
	var topics []string
	// The join stages of a join of three or more relations: their
	// internal streams, as the running query named them, and every
	// store of theirs this node has.
	var stages []*planner.StreamPlan
	switch {
	case q != nil && q.Stream != nil:
		stages = q.Stream.Stages
	case q != nil && q.Plan != nil:
		stages = q.Plan.Stages
	}
	if q != nil && q.Plan != nil && q.Plan.Join != nil {
		chain := q.Plan.Join.Chain()
		for _, js := range chain[:len(chain)-1] {
			topics = append(topics, js.Joined.ChangesTopic(rt.opts.Cluster))
		}
	}
	{
		for _, st := range stages {
			s := st.Stream
			topics = append(topics, s.StageTopic(rt.opts.Cluster), s.ChangelogTopic(rt.opts.Cluster), s.RepartitionTopic(rt.opts.Cluster),
				s.ChangesTopic(rt.opts.Cluster), s.RegroupTopic(rt.opts.Cluster))
		}
	}
	if ids, err := rt.opts.DB.Stores(); err == nil {
		for _, id := range ids {
			if rel.OwnsStageStore(id.View) {
				if err := rt.opts.DB.DropView(id.View); err != nil {
					return err
				}
			}
		}
	}
	if rel.Kind != catalog.KindTable {
		// A view's change or join stage or a join's routing stage, and
		// the change stage of a view grouping a view or a join, if it
		// has them.
		for _, store := range []string{rel.ChangesStore(), rel.RegroupStore()} {
			if err := rt.opts.DB.DropView(store); err != nil {
				return err
			}
		}
		topics = append(topics, rel.ChangesTopic(rt.opts.Cluster), rel.RegroupTopic(rt.opts.Cluster))
	}
	switch {
	case rel.Derived() || rel.Kind == catalog.KindInsert:
		// A derived stream's topic is its output, for others to read:
		// it stays, as a published view's does.
		topics = append(topics, rel.ChangelogTopic(rt.opts.Cluster), rel.RepartitionTopic(rt.opts.Cluster))
	case rel.Kind == catalog.KindView:
		topics = append(topics, rel.RepartitionTopic(rt.opts.Cluster), rel.ChangelogTopic(rt.opts.Cluster))
	default:
		topics = append(topics, rel.RepartitionTopic(rt.opts.Cluster))
	}
	var errs []error
	for _, t := range topics {
		if err := kafka.DeleteTopic(ctx, rt.adm, t); err != nil && !errors.Is(err, kafka.ErrUnknownTopic) {
			errs = append(errs, err)
		}
	}
	if _, err := rt.adm.DeleteGroups(ctx, rel.RekeyGroup(rt.opts.Cluster)); err != nil {
		rt.log.Debug("deleting rekey group", "err", err)
	}
	return errors.Join(errs...)
}

// EnsurePublished creates the topic view publishes its rows to
// (planner.PublishedTopic), if it has one and it does not exist, with a
// partition per view partition: row r of partition p goes to partition p,
// which is the partition the view's partitioner gives r's key. A topic
// that exists with another partition count is 42P16. maxBytes, when not
// nil, is its max.message.bytes; nil reads the source's.
func (rt *Runtime) EnsurePublished(ctx context.Context, view *catalog.Relation, maxBytes *string) error {
	topic := planner.PublishedTopic(view)
	if topic == "" {
		return nil
	}
	configs := map[string]*string{}
	if maxBytes != nil {
		configs["max.message.bytes"] = maxBytes
	}
	_, n, err := kafka.EnsureTopic(ctx, rt.adm, topic, view.Partitions, configs)
	if err != nil {
		return pgerr.New(pgerr.IOError, "creating topic %s for view %s: %v", topic, view.Name, err)
	}
	if n != view.Partitions {
		return pgerr.New(pgerr.InvalidTableDefinition, "topic %s has %d partitions, but view %s has %d", topic, n, view.Name, view.Partitions).
			WithHint("Publish to a new topic, or give the view WITH (partitions = %d) if it re-keys.", n)
	}
	return nil
}

// Registry returns the schema registry of the registry formats, nil when
// the node has none.
func (rt *Runtime) Registry() *serde.Registry { return rt.opts.Registry }
