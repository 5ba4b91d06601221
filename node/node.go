package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/exec"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/pgwire"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/pull"
	"github.com/basindb/basin/serde"
	"github.com/basindb/basin/sql"
	"github.com/basindb/basin/stream"
)

// Node is one running basin node.
type Node struct {
	opts   Options
	log    *slog.Logger
	id     string
	lock   *os.File
	broker *kafka.Broker
	db     *materialize.DB
	rt     *stream.Runtime
	// users are who may log in, to Postgres and to the status page.
	users *users
	// lags are the samples the status page draws (statuspage.go), taken
	// until stopSampling.
	lags         lagHistory
	stopSampling context.CancelFunc
	cat          *catalog.Catalog
	clog         *catalog.Log
	prod         *kgo.Client
	engine       *exec.Engine
	pg           *pgwire.Server
	http         *http.Server
	httpLn       net.Listener
	wg           sync.WaitGroup
	// cluster is the node's group membership, control its heartbeats
	// and lag reports; nil for a node alone on its embedded broker. Set
	// once, while other goroutines (catalog changes, HTTP handlers) may
	// already look: read them with clusterOf and controlOf.
	cluster atomic.Pointer[cluster]
	control atomic.Pointer[control]
	metrics *metrics
	// peerAuth signs and verifies inter-node HTTP requests; nil
	// without a cluster secret.
	peerAuth *peerAuth

	mu struct {
		sync.Mutex
		// ready is set once the startup replay is done; before it,
		// catalog changes are only recorded and the queries of the final
		// catalog are started in one go.
		ready bool
		// dropped holds the stores of the relations the startup replay
		// saw dropped: the only ones startQueries may delete.
		dropped map[string]bool
	}
}

// Start starts a node: the data-dir lock, the embedded broker when no
// brokers are given, the stores, the catalog replay, the persistent
// queries, then the Postgres and HTTP servers. On error everything
// started is stopped again.
func Start(ctx context.Context, opts Options) (n *Node, err error) {
	opts.ensureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	// TLS files and users are checked first: a typo there should not
	// cost a broker start.
	tlsConfig, err := loadTLS(opts.TLSCert, opts.TLSKey, opts.Logger)
	if err != nil {
		return nil, err
	}
	method, err := pgwire.ParseAuthMethod(opts.Auth) // valid: Validate checked it
	if err != nil {
		return nil, err
	}
	users := opts.Users
	if opts.ClusterSecret != "" && method != pgwire.AuthTrust {
		users = maps.Clone(users)
		users[ClusterUser] = opts.ClusterSecret
	}
	auth, err := newUsers(method, users)
	if err != nil {
		return nil, err
	}
	if auth.method == pgwire.AuthTrust && len(opts.Users) > 0 {
		opts.Logger.Warn("users are configured but --auth is trust: any user name connects without a password; " +
			"use --auth scram to require them")
	}
	node := &Node{opts: opts, log: opts.Logger, metrics: newMetrics(), peerAuth: newPeerAuth(opts.ClusterSecret), users: auth}
	defer func() {
		if err != nil {
			_ = node.Close()
		}
	}()
	n = node
	if n.lock, err = lockDataDir(opts.DataDir); err != nil {
		return nil, err
	}
	if n.id, err = opts.nodeID(); err != nil {
		return nil, err
	}
	n.log = n.log.With("node", n.id)
	brokers := opts.Brokers
	if len(brokers) == 0 {
		if n.broker, err = n.startBroker(); err != nil {
			return nil, err
		}
		brokers = n.broker.Addrs()
		n.log.Info("embedded broker started", "addrs", strings.Join(brokers, ","))
	}
	if n.db, err = materialize.Open(materialize.Options{Dir: filepath.Join(opts.DataDir, "state"), Logger: n.log,
		RowCacheSize: int64(max(opts.RowCacheMB, 0)) << 20, ScanCacheSize: int64(max(opts.ScanCacheMB, 0)) << 20}); err != nil {
		return nil, err
	}
	var reg *serde.Registry
	if opts.SchemaRegistry != "" {
		ro, err := opts.registryOptions()
		if err != nil {
			return nil, err
		}
		if reg, err = serde.NewRegistry(ro); err != nil {
			return nil, err
		}
	}
	if n.rt, err = stream.NewRuntime(stream.RuntimeOptions{Brokers: brokers, Cluster: opts.Cluster, Node: n.id, DB: n.db, Logger: n.log,
		RecoveryLag: opts.AcceptableRecoveryLag, Halt: n.recordHalt, Registry: reg,
		ClientOpts: []kgo.Opt{n.metrics.kafka.opt()}, Freshness: n.metrics.observeFreshness}); err != nil {
		return nil, err
	}
	if n.prod, err = kafka.NewClient(kafka.ClientOptions{Brokers: brokers, ClientID: "basin-" + n.id + "-insert", Logger: n.log},
		append(kafka.ProducerOpts(), n.metrics.kafka.opt())...); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := kafka.WaitReady(wctx, n.prod); err != nil {
		return nil, fmt.Errorf("connecting to Kafka at %s: %w", strings.Join(brokers, ","), err)
	}
	n.cat = catalog.New()
	n.clog, err = catalog.OpenLog(wctx, catalog.LogOptions{
		Brokers:    brokers,
		Topic:      catalog.CommandTopic(opts.Cluster),
		Node:       n.id,
		Logger:     n.log,
		ClientOpts: []kgo.Opt{n.metrics.kafka.opt()},
		// The topic must still hold the last command this node applied:
		// a replay of a topic that lost commands (a corrupt segment the
		// broker truncated) fails instead of starting a partial catalog.
		MarkFile: filepath.Join(opts.DataDir, catalogMarkFile),
	}, n.cat, n.onChange)
	if err != nil {
		return nil, err
	}
	if len(opts.Brokers) > 0 {
		// In a cluster the assignment decides what runs here; until it
		// arrives, nothing does.
		n.rt.SetRoles(stream.Roles{})
	}
	if err := n.startQueries(); err != nil {
		return nil, err
	}
	n.engine = &exec.Engine{
		Catalog: n.cat, Log: n.clog, Runtime: n.rt, Reads: pull.New(n.rt), Producer: n.prod, ObservePull: n.metrics.observePull,
		Cluster: opts.Cluster, Node: n.id, DefaultPartitions: int32(opts.DefaultPartitions), Logger: n.log,
	}
	if n.broker != nil {
		n.engine.DiskFullSince = n.broker.DiskFullSince
	}
	n.engine.NotifyViews()
	if err := n.ensureProcessingLog(wctx); err != nil {
		return nil, err
	}
	if n.pg, err = pgwire.NewServer(pgwire.Options{
		Addr:           opts.PGAddr,
		MaxConnections: opts.MaxConnections,
		Logger:         n.log.With("component", "pgwire"),
		TLSConfig:      tlsConfig,
		RequireTLS:     opts.RequireTLS,
		Authenticator:  auth,
	}, backend{n.engine}); err != nil {
		return nil, err
	}
	n.engine.Backends = backends{n.pg}
	if len(opts.Brokers) > 0 {
		// Every field of the engine is set before the server starts, for
		// sessions read them without a lock. The membership itself
		// starts after it (a node joins with the address it serves on):
		// clusterInfo finds it once it is there.
		n.engine.Members = clusterInfo{n}
	}
	if err := n.pg.Start(); err != nil {
		return nil, fmt.Errorf("postgres listener on %s: %w", opts.PGAddr, err)
	}
	if testServing != nil {
		testServing(n)
	}
	if opts.HTTPAddr != "" {
		if err := n.startHTTP(tlsConfig); err != nil {
			return nil, err
		}
	}
	if len(opts.Brokers) > 0 {
		if err := n.startControl(ha.LivenessConfig{HeartbeatInterval: opts.HeartbeatInterval}, opts.LagReportInterval); err != nil {
			return nil, err
		}
		if err := n.startCluster(wctx, brokers); err != nil {
			return nil, err
		}
		n.controlOf().start()
	}
	n.log.Info("basin node ready", "pg", n.pg.Addr().String(), "http", n.HTTPAddr(), "brokers", strings.Join(n.Brokers(), ","),
		"embedded_broker", n.broker != nil, "data_dir", opts.DataDir, "cluster", opts.Cluster,
		"default_partitions", opts.DefaultPartitions, "auth", auth.method.String(), "tls", tlsConfig != nil,
		"session_timeout", opts.SessionTimeout, "heartbeat_interval", opts.HeartbeatInterval)
	return n, nil
}

// startBroker starts the embedded broker on opts.BrokerAddr or, when
// that port is taken and opts.BrokerAddrFallback, on a free port of the
// same host.
func (n *Node) startBroker() (*kafka.Broker, error) {
	bopts := kafka.BrokerOptions{
		Addr:    n.opts.BrokerAddr,
		DataDir: filepath.Join(n.opts.DataDir, "kafka"),
		Logger:  n.log,
	}
	b, err := kafka.StartBroker(bopts)
	if err != nil && n.opts.BrokerAddrFallback && errors.Is(err, syscall.EADDRINUSE) {
		host, _, _ := net.SplitHostPort(n.opts.BrokerAddr)
		bopts.Addr = net.JoinHostPort(host, "0")
		if b, err = kafka.StartBroker(bopts); err == nil {
			n.log.Warn("the embedded broker's default address is taken (by another broker or basin?); it listens on a free port instead: "+
				"point Kafka producers at addr, or give --broker-addr", "taken", n.opts.BrokerAddr, "addr", strings.Join(b.Addrs(), ","))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("starting the embedded broker: %w", err)
	}
	return b, nil
}

// testServing, when a test sets it, is called by Start as soon as the
// Postgres server serves, with the engine as sessions first see it.
var testServing func(*Node)

// recordHalt records in the catalog that a task of relation lost input
// it had applied (stream's halts.go): the partition's tasks stay stopped
// on every node until the operator resumes or drops the relation.
func (n *Node) recordHalt(ctx context.Context, relation string, h catalog.Halt) error {
	if n.clog == nil {
		return errors.New("the catalog is not open yet")
	}
	ch, err := n.clog.Submit(ctx, &catalog.Command{Op: catalog.OpHalt, Name: relation, Halt: &h})
	if err != nil {
		return err
	}
	return ch.Err
}

// onChange acts on a catalog change: start or drop the relation's query.
// During the startup replay it does nothing; startQueries then starts the
// queries of the final catalog.
func (n *Node) onChange(ch catalog.Change) {
	n.mu.Lock()
	ready := n.mu.ready
	n.mu.Unlock()
	if ch.Err != nil {
		n.log.Debug("catalog command rejected", "offset", ch.Offset, "err", ch.Err)
		return
	}
	if !ready {
		if ch.Dropped != nil {
			n.mu.Lock()
			if n.mu.dropped == nil {
				n.mu.dropped = map[string]bool{}
			}
			n.mu.dropped[ch.Dropped.StoreName()] = true
			n.mu.dropped[ch.Dropped.ChangesStore()] = true
			n.mu.dropped[ch.Dropped.RegroupStore()] = true
			n.mu.Unlock()
		}
		return
	}
	if c := n.clusterOf(); c != nil && (ch.Created != nil || ch.Dropped != nil) {
		// Every node applies the same command; the leader's request is
		// enough (it balances from its own catalog), and one request
		// per node would rebalance the group once per node.
		// A node without an assignment yet gets the tasks when its
		// first join completes; an assignment that already has the
		// catalog's tasks needs no new one.
		if c.bal.IsLeader() && c.tasksChanged() {
			defer c.bal.RequestRebalance("catalog changed")
		}
	}
	switch {
	case ch.Created != nil:
		if err := n.startQuery(ch.Created); err != nil {
			n.log.Error("starting query", "relation", ch.Created.Name, "err", err)
		}
	case ch.Altered != nil:
		n.rt.Alter(ch.Altered)
	case ch.Dropped != nil:
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.rt.Drop(ctx, ch.Dropped); err != nil {
			n.log.Warn("dropping state", "relation", ch.Dropped.Name, "err", err)
		}
	}
	if n.engine != nil && (ch.Created != nil || ch.Dropped != nil) {
		n.engine.RelationsChanged(ch.Created, ch.Dropped) // LISTEN on its name
	}
}

// catalogMarkFile, in the data dir, records the last catalog command the
// node applied (catalog.LogOptions.MarkFile).
const catalogMarkFile = "catalog-mark.json"

// startQueries starts the queries of every table and view in the catalog
// after the startup replay, in creation order, and deletes stores left
// on disk by relations dropped while the node was down.
//
// A store is deleted only when the replay, which reached the end of the
// command topic (OpenLog checked it), applied the DROP of its relation. A
// store no relation of the catalog owns and no DROP explains is kept and
// reported: a relation merely absent from the catalog may be one whose
// command the topic lost, and its state is then all that is left of it.
func (n *Node) startQueries() error {
	rels := n.cat.Queries()
	sort.Slice(rels, func(i, j int) bool { return rels[i].Version < rels[j].Version })
	live := map[string]bool{}
	for _, r := range rels {
		live[r.StoreName()] = true
		live[r.ChangesStore()] = true // a view's change or join stage, if it has one
		live[r.RegroupStore()] = true // the change stage of a view grouping a view or a join
	}
	ids, err := n.db.Stores()
	if err != nil {
		return err
	}
	n.mu.Lock()
	dropped := n.mu.dropped
	n.mu.dropped = nil
	n.mu.Unlock()
	seen := map[string]bool{}
	for _, id := range ids {
		if live[id.View] || seen[id.View] || slices.ContainsFunc(rels, func(r *catalog.Relation) bool { return r.OwnsStageStore(id.View) }) {
			continue
		}
		seen[id.View] = true // DropView takes every partition at once
		if !dropped[id.View] {
			n.log.Warn("keeping state that no relation of the catalog owns and no DROP in the command topic explains; "+
				"once sure nothing needs it, stop the node and move the data dir's state aside", "store", id.View,
				"topic", catalog.CommandTopic(n.opts.Cluster))
			continue
		}
		n.log.Info("deleting state of a dropped relation", "store", id.View)
		if err := n.db.DropView(id.View); err != nil {
			return err
		}
	}
	n.mu.Lock()
	n.mu.ready = true
	n.mu.Unlock()
	for _, r := range rels {
		if err := n.startQuery(r); err != nil {
			return fmt.Errorf("starting the query of %s: %w", r.Name, err)
		}
	}
	return nil
}

func (n *Node) startQuery(rel *catalog.Relation) error {
	switch rel.Kind {
	case catalog.KindTable:
		return n.rt.StartTable(rel)
	case catalog.KindView:
		stmts, err := sql.ParseStatements(rel.SQL)
		if err != nil {
			return err
		}
		if len(stmts) != 1 {
			return fmt.Errorf("view %s: stored statement has %d statements", rel.Name, len(stmts))
		}
		ctas, ok := stmts[0].Stmt.(*sql.CreateTableAs)
		if !ok {
			return fmt.Errorf("view %s: stored statement is a %T", rel.Name, stmts[0].Stmt)
		}
		plan, err := planner.PlanView(n.cat, ctas, rel.SQL)
		if err != nil {
			return err
		}
		plan.View = rel
		return n.rt.StartView(plan)
	case catalog.KindInsert:
		stmts, err := sql.ParseStatements(rel.SQL)
		if err != nil {
			return err
		}
		ins, ok := stmts[0].Stmt.(*sql.InsertSelect)
		if len(stmts) != 1 || !ok {
			return fmt.Errorf("query %s: stored statement is not one INSERT ... SELECT", rel.QueryName())
		}
		plan, err := planner.PlanInsertSelect(n.cat, ins, rel.Name, rel.SQL)
		if err != nil {
			return err
		}
		plan.Stream = rel
		return n.rt.StartStream(plan)
	case catalog.KindStream:
		if !rel.Derived() {
			return nil
		}
		stmts, err := sql.ParseStatements(rel.SQL)
		if err != nil {
			return err
		}
		csas, ok := stmts[0].Stmt.(*sql.CreateStreamAs)
		if len(stmts) != 1 || !ok {
			return fmt.Errorf("stream %s: stored statement is not one CREATE STREAM ... AS SELECT", rel.Name)
		}
		plan, err := planner.PlanStream(n.cat, csas, rel.SQL)
		if err != nil {
			return err
		}
		plan.Stream = rel
		return n.rt.StartStream(plan)
	}
	return nil
}

// ensureProcessingLog declares the processing-log stream on first start.
func (n *Node) ensureProcessingLog(ctx context.Context) error {
	if _, ok := n.cat.Lookup(catalog.ProcessingLogName); ok {
		return nil
	}
	topic := catalog.ProcessingLogTopic(n.opts.Cluster)
	if _, _, err := kafka.EnsureTopic(ctx, n.rt.Admin(), topic, 1, nil); err != nil {
		return err
	}
	rel := &catalog.Relation{
		Name: catalog.ProcessingLogName, Kind: catalog.KindStream, Schema: stream.ProcessingLogSchema,
		Topic: topic, Partitions: 1, KeyFormat: planner.FormatKafka, ValueFormat: planner.FormatJSON,
		SQL: "-- created by basin: records that persistent queries skipped",
	}
	ch, err := n.clog.Submit(ctx, &catalog.Command{Op: catalog.OpCreate, Relation: rel})
	if err != nil {
		return err
	}
	if ch.Err != nil && pgerr.CodeOf(ch.Err) != pgerr.DuplicateTable {
		return ch.Err
	}
	return nil
}

// startHTTP serves the HTTP address, over TLS with tlsConfig when the
// node has a certificate (the Postgres server's): the cluster endpoints
// carry what a node knows of its peers, and peers call them with https
// (control.url).
func (n *Node) startHTTP(tlsConfig *tls.Config) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	n.metrics.register(reg, n)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// Go's profiles (CPU, heap, goroutines, ...), for make bench and for
	// operators, only when asked for (--pprof): they show the command
	// line and the heap's contents to whoever reaches the address, and a
	// CPU profile or a trace costs CPU while it runs.
	if n.opts.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	// /healthz fails, naming the part, when the node cannot take new
	// connections: the embedded broker's or the Postgres listener is
	// gone or cannot accept (out of file descriptors).
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if problems := n.healthProblems(); len(problems) > 0 {
			http.Error(w, strings.Join(problems, "\n"), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	// /readyz fails, one line per problem, while a read of some table or
	// view would fail within its bounds (ready.go).
	// The status page, for people (statuspage.go).
	mux.HandleFunc("GET /{$}", n.statusAuth(n.handleStatusPage))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if problems := n.unready(time.Now()); len(problems) > 0 {
			if len(problems) > maxReadyProblems {
				problems = append(problems[:maxReadyProblems], fmt.Sprintf("and %d more", len(problems)-maxReadyProblems))
			}
			http.Error(w, strings.Join(problems, "\n"), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	// The cluster endpoints: what the nodes of a cluster send each
	// other. peerEndpoint bounds their bodies and, with a cluster
	// secret, refuses a request that is not signed by a node of the
	// cluster (peerauth.go).
	mux.HandleFunc("POST /heartbeat", n.peerEndpoint(func(w http.ResponseWriter, r *http.Request) {
		if c := n.controlOf(); c != nil {
			c.handleHeartbeat(w, r)
			return
		}
		http.Error(w, "this node is not in a cluster", http.StatusNotFound)
	}))
	mux.HandleFunc("POST /lag", n.peerEndpoint(func(w http.ResponseWriter, r *http.Request) {
		if c := n.controlOf(); c != nil {
			c.handleLag(w, r)
			return
		}
		http.Error(w, "this node is not in a cluster", http.StatusNotFound)
	}))
	mux.HandleFunc("GET /clusterStatus", n.peerEndpoint(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, r, n.clusterStatus()) // a node alone is its cluster's one member
	}))
	mux.HandleFunc("GET /tasks", n.peerEndpoint(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, r, n.localTasks())
	}))
	ln, err := net.Listen("tcp", n.opts.HTTPAddr)
	if err != nil {
		return fmt.Errorf("http listener on %s: %w", n.opts.HTTPAddr, err)
	}
	// Capped, so that a flood of silent connections cannot take every
	// descriptor (httplimits.go).
	ln = n.limitHTTPListener(ln)
	n.httpLn = ln
	n.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		IdleTimeout:       httpIdleTimeout,
	}
	serve := func() error { return n.http.Serve(ln) }
	if tlsConfig != nil {
		n.http.TLSConfig = tlsConfig.Clone()
		// A client that fails the handshake (plaintext, a bad
		// certificate) is its own problem: a line at debug level in the
		// node's log, not one per attempt on stderr.
		n.http.ErrorLog = slog.NewLogLogger(n.log.With("component", "http").Handler(), slog.LevelDebug)
		serve = func() error { return n.http.ServeTLS(ln, "", "") }
	}
	sctx, stop := context.WithCancel(context.Background())
	n.stopSampling = stop
	n.wg.Add(2)
	go func() {
		defer n.wg.Done()
		n.sampleLags(sctx)
	}()
	go func() {
		defer n.wg.Done()
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("http server", "err", err)
		}
	}()
	return nil
}

// healthProblems is what /healthz reports: the parts that cannot take
// new connections, one line each.
func (n *Node) healthProblems() []string {
	var problems []string
	if n.broker != nil {
		if err := n.broker.Health(); err != nil {
			problems = append(problems, "embedded broker: "+err.Error())
		}
	}
	if err := n.pg.Health(); err != nil {
		problems = append(problems, "postgres: "+err.Error())
	}
	return problems
}

// PGAddr is the address the Postgres server listens on.
func (n *Node) PGAddr() string { return n.pg.Addr().String() }

// HTTPAddr is the address of the HTTP server, "" when disabled.
func (n *Node) HTTPAddr() string {
	if n.httpLn == nil {
		return ""
	}
	return n.httpLn.Addr().String()
}

// BrokerAddr is the address the embedded broker listens on (advertised
// to Kafka clients), "" when the node uses Options.Brokers.
func (n *Node) BrokerAddr() string {
	if n.broker == nil {
		return ""
	}
	return strings.Join(n.broker.Addrs(), ",")
}

// Options are the options the node runs with, defaults filled in,
// without the secrets (Users' passwords and ClusterSecret).
func (n *Node) Options() Options {
	o := n.opts
	o.Users = nil
	o.ClusterSecret = ""
	return o
}

// Brokers are the Kafka brokers the node uses.
func (n *Node) Brokers() []string {
	if n.broker != nil {
		return n.broker.Addrs()
	}
	return n.opts.Brokers
}

// ID is the node id.
func (n *Node) ID() string { return n.id }

// Close stops the node: the Postgres server first, so that its sessions
// hear FATAL 57P01 at once and no new work arrives, then the HTTP server,
// the heartbeats and the membership loop, the catalog replay, the queries
// (each commits or aborts its transaction); in a cluster the node then
// leaves the group, so that its tasks move to their standbys at once;
// then the stores and the broker. Every step is bounded, so that a
// cluster node stops in well under a second as a node alone does.
func (n *Node) Close() error {
	var errs []error
	if n.pg != nil {
		errs = append(errs, n.pg.Close())
	}
	if n.engine != nil {
		n.engine.Close()
	}
	if n.http != nil {
		// The handlers answer at once, but Shutdown also waits for a
		// connection a peer opened and has not sent a request on yet
		// (for up to 5s) and for a pprof profile to end: past httpGrace
		// the connections are closed.
		ctx, cancel := context.WithTimeout(context.Background(), httpGrace)
		if err := n.http.Shutdown(ctx); errors.Is(err, context.DeadlineExceeded) {
			// Shutdown has closed the listener already.
			if err := n.http.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		} else if err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	if n.stopSampling != nil {
		n.stopSampling()
	}
	n.wg.Wait()
	if c := n.controlOf(); c != nil {
		c.close()
	}
	c := n.clusterOf()
	if c != nil {
		c.stop()
	}
	if n.clog != nil {
		n.clog.Close()
	}
	if n.rt != nil {
		n.rt.Close()
	}
	if c != nil {
		c.leave()
	}
	if n.prod != nil {
		n.prod.Close()
	}
	if n.db != nil {
		errs = append(errs, n.db.Close())
	}
	if n.broker != nil {
		errs = append(errs, n.broker.Close())
	}
	if n.lock != nil {
		errs = append(errs, n.lock.Close())
	}
	return errors.Join(errs...)
}

// httpGrace is how long Close lets HTTP requests in flight finish.
const httpGrace = 100 * time.Millisecond

func (n *Node) clusterOf() *cluster { return n.cluster.Load() }
func (n *Node) controlOf() *control { return n.control.Load() }

// backend adapts the engine's sessions to the pgwire server.
type backend struct{ e *exec.Engine }

func (b backend) Open(_ context.Context, params map[string]string, info pgwire.ConnInfo) (pgwire.Session, error) {
	return session{b.e.NewSession(params, exec.Client{PID: int32(info.PID), Addr: info.RemoteAddr})}, nil
}

// backends lets sessions signal each other through the pgwire server.
type backends struct{ s *pgwire.Server }

func (b backends) Cancel(pid int32) bool    { return b.s.CancelBackend(uint32(pid)) }
func (b backends) Terminate(pid int32) bool { return b.s.TerminateBackend(uint32(pid)) }

type session struct{ s *exec.Session }

func (s session) Query(ctx context.Context, text string, w pgwire.ResultWriter) error {
	return s.s.Query(ctx, text, w)
}
func (s session) ParameterStatus() map[string]string { return s.s.ParameterStatus() }
func (s session) TxnStatus() byte                    { return s.s.TxnStatus() }
func (s session) Close()                             { s.s.Close() }
func (s session) SetWake(wake func())                { s.s.SetWake(wake) }

// Notifications converts exec's notifications for the wire.
func (s session) Notifications() ([]pgwire.Notification, *pgerr.Error) {
	ns, notice := s.s.Notifications()
	out := make([]pgwire.Notification, len(ns))
	for i, n := range ns {
		out[i] = pgwire.Notification{PID: uint32(n.PID), Channel: n.Channel, Payload: n.Payload}
	}
	return out, notice
}

func (s session) Prepare(ctx context.Context, text string, paramTypes []catalog.Type) (pgwire.PreparedStatement, error) {
	p, err := s.s.Prepare(ctx, text, paramTypes)
	if err != nil {
		return nil, err
	}
	return prepared{p}, nil
}

// prepared and portal adapt exec's extended-protocol types: their
// methods take and return pgwire's interfaces, which exec cannot name.
type prepared struct{ *exec.Prepared }

func (p prepared) Bind(ctx context.Context, params []any) (pgwire.Portal, error) {
	pt, err := p.Prepared.Bind(ctx, params)
	if err != nil {
		return nil, err
	}
	return portal{pt}, nil
}

type portal struct{ *exec.Portal }

func (p portal) Execute(ctx context.Context, w pgwire.ResultWriter, maxRows int) (bool, error) {
	return p.Portal.Execute(ctx, w, maxRows)
}
