package node

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/basindb/basin/exec"
	"github.com/basindb/basin/ha"
	"github.com/basindb/basin/materialize"
)

// metrics are the node's Prometheus metrics beyond the Go runtime's and
// the process's: pull queries by plan and route, how reads were routed
// (failovers, rejected replicas), heartbeats, and per-task lag (read at
// scrape time). docs/operations.md lists them.
type metrics struct {
	pulls      *prometheus.CounterVec
	pullTime   *prometheus.HistogramVec
	failovers  *prometheus.CounterVec
	rejected   *prometheus.CounterVec
	noReplica  prometheus.Counter
	hbMissed   *prometheus.CounterVec
	hbFailed   *prometheus.CounterVec
	lagReports *prometheus.CounterVec
	// peerRefused counts inter-node requests refused for their
	// signature; unlabelled, as a forger chooses every other value.
	peerRefused prometheus.Counter
	// pullCount counts the pull queries, for the status page's rate.
	pullCount atomic.Int64
	// freshness is the age of the records each batch a task applied
	// took in, by relation and role (stream.RuntimeOptions.Freshness).
	freshness *prometheus.HistogramVec
	// kafka is what the node's Kafka clients did with the brokers.
	kafka *kafkaMetrics

	// pullSeries are pulls' and pullTime's series for every plan and
	// route a query reports, resolved once: looking a series up by its
	// label values hashes them, per query.
	pullSeries [len(pullPlans)][len(pullRoutes)]pullSeries
}

// pullSeries are the series of one plan and route.
type pullSeries struct {
	ok, failed prometheus.Counter
	time       prometheus.Observer
}

// The plans and routes of exec.PullStats.
var (
	pullPlans  = [...]string{"lookup", "scan", "stream", "catalog"}
	pullRoutes = [...]string{"local", "standby", "restoring", "forwarded"}
)

func newMetrics() *metrics {
	m := &metrics{
		pulls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_pull_queries_total",
			Help: "Pull queries (SELECT) run on this node, by plan (lookup, scan, stream, catalog), route (local, standby, restoring, forwarded) and outcome (ok, error).",
		}, []string{"plan", "route", "outcome"}),
		pullTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "basin_pull_query_duration_seconds",
			Help:    "Time from the start of a pull query to its last row sent, by plan and route.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14), // 100µs to ~15s
		}, []string{"plan", "route"}),
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_read_failovers_total",
			Help: "Reads of a partition that moved to the next replica because an attempt failed (refused, reset, basin.forward_timeout, unavailable), by the failed replica's role.",
		}, []string{"role"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_read_rejected_replicas_total",
			Help: "Replicas the router passed over for a partition read, by reason (read_from, down, lag, time_lag, lag_unknown, position).",
		}, []string{"reason"}),
		noReplica: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "basin_read_no_replica_total",
			Help: "Partition reads that failed because no replica qualified (SQLSTATE 55000).",
		}),
		hbMissed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_heartbeats_missed_total",
			Help: "Heartbeat intervals in which a peer's heartbeat did not arrive, counted when the next one arrives, by peer.",
		}, []string{"peer"}),
		hbFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_heartbeat_sends_failed_total",
			Help: "Heartbeats this node failed to deliver, by peer.",
		}, []string{"peer"}),
		lagReports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_lag_reports_received_total",
			Help: "Lag reports received, by peer.",
		}, []string{"peer"}),
		peerRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "basin_peer_requests_refused_total",
			Help: "Inter-node HTTP requests refused: no or a bad signature, a stale timestamp or a replayed nonce.",
		}),
		freshness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "basin_freshness_seconds",
			Help:    "End-to-end freshness: for each batch a task applied, the age of the oldest record it took in (from the record's timestamp to its change being readable on this node), by relation and role. A standby's records are its changelog's, timestamped when the active committed them.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}, []string{"relation", "role"}),
		kafka: newKafkaMetrics(),
	}
	// The series of known label values exist from the start, at 0, so a
	// rate over them is 0 rather than nothing until the first event.
	for _, role := range []ha.Role{ha.RoleActive, ha.RoleStandby, ha.RoleRestoring, ha.RoleWarmup} {
		m.failovers.WithLabelValues(string(role))
	}
	for _, code := range []ha.RejectCode{ha.RejectReadFrom, ha.RejectDown, ha.RejectLagUnknown, ha.RejectOffsetLag,
		ha.RejectTimeLag, ha.RejectPosition, ha.RejectAttemptFailed, ha.RejectStaleAnswer} {
		m.rejected.WithLabelValues(string(code))
	}
	for i, plan := range pullPlans {
		for j, route := range pullRoutes {
			m.pullSeries[i][j] = pullSeries{
				ok:     m.pulls.WithLabelValues(plan, route, "ok"),
				failed: m.pulls.WithLabelValues(plan, route, "error"),
				time:   m.pullTime.WithLabelValues(plan, route),
			}
		}
	}
	return m
}

// register adds the metrics, and the collector of task lags and peer
// liveness, to reg.
func (m *metrics) register(reg prometheus.Registerer, n *Node) {
	reg.MustRegister(m.pulls, m.pullTime, m.failovers, m.rejected, m.noReplica, m.hbMissed, m.hbFailed, m.lagReports, m.peerRefused,
		m.freshness, &stateCollector{n: n})
	reg.MustRegister(m.kafka.collectors()...)
}

// observeFreshness records the freshness of one batch a task applied.
func (m *metrics) observeFreshness(relation, role string, age time.Duration) {
	m.freshness.WithLabelValues(relation, role).Observe(age.Seconds())
}

// observePull records one finished pull query.
func (m *metrics) observePull(s exec.PullStats) {
	m.pullCount.Add(1)
	i, j := slices.Index(pullPlans[:], s.Plan), slices.Index(pullRoutes[:], s.Route)
	if i < 0 || j < 0 {
		// Not one of the known plans and routes: by label values.
		outcome := "ok"
		if s.Err != nil {
			outcome = "error"
		}
		m.pulls.WithLabelValues(s.Plan, s.Route, outcome).Inc()
		m.pullTime.WithLabelValues(s.Plan, s.Route).Observe(s.Duration.Seconds())
		return
	}
	ps := &m.pullSeries[i][j]
	if s.Err != nil {
		ps.failed.Inc()
	} else {
		ps.ok.Inc()
	}
	ps.time.Observe(s.Duration.Seconds())
}

// observeRouting records the replicas a read passed over.
func (m *metrics) observeRouting(r ha.Routing) {
	for _, rj := range r.Rejected {
		for _, code := range rj.Codes {
			m.rejected.WithLabelValues(string(code)).Inc()
		}
	}
}

// stateCollector reports, at each scrape, every task's lag on this node
// and what heartbeats say of each peer.
type stateCollector struct{ n *Node }

var (
	taskOffsetLagDesc = prometheus.NewDesc("basin_task_offset_lag",
		"Input records a task on this node does not yet reflect.", []string{"task", "relation", "role", "state"}, nil)
	taskTimeLagDesc = prometheus.NewDesc("basin_task_time_lag_seconds",
		"Age of the oldest input record a lagging task does not yet reflect (0 when caught up).", []string{"task", "relation", "role", "state"}, nil)
	taskMisplacedDesc = prometheus.NewDesc("basin_task_misplaced_records_total",
		"Input records a task found on a partition other than the one its relation's partitioner gives their key, since it started on this node (an active forwards them there).",
		[]string{"task", "relation", "role"}, nil)
	taskRecordsInDesc = prometheus.NewDesc("basin_task_records_in_total",
		"Records a task took in (its input; a standby's or warm-up's, its changelog) since it started on this node.",
		[]string{"task", "relation", "role"}, nil)
	taskBytesInDesc = prometheus.NewDesc("basin_task_bytes_in_total",
		"Bytes of the keys and values of the records a task took in since it started on this node.",
		[]string{"task", "relation", "role"}, nil)
	taskRecordsOutDesc = prometheus.NewDesc("basin_task_records_out_total",
		"Records a task wrote (its changelog's, published, forwarded and processing-log records; not its checkpoint markers) since it started on this node.",
		[]string{"task", "relation", "role"}, nil)
	taskBytesOutDesc = prometheus.NewDesc("basin_task_bytes_out_total",
		"Bytes of the keys and values of the records a task wrote since it started on this node.",
		[]string{"task", "relation", "role"}, nil)
	taskTransactionsDesc = prometheus.NewDesc("basin_task_transactions_total",
		"Kafka transactions a task ended since it started on this node, by outcome (committed, aborted).",
		[]string{"task", "relation", "role", "outcome"}, nil)
	processingLogDesc = prometheus.NewDesc("basin_processing_log_records_total",
		"Source records this node's tasks skipped into the processing log, by relation and reason (the SQLSTATE of why: 22P02 a value that does not parse, 54000 a result too large for its topic, ...).",
		[]string{"relation", "sqlstate"}, nil)
	pebbleDiskDesc = prometheus.NewDesc("basin_pebble_disk_bytes",
		"Disk space the node's Pebble store takes (tables, write-ahead log, manifests).", nil, nil)
	pebbleMemtableDesc = prometheus.NewDesc("basin_pebble_memtable_bytes",
		"Memory of the Pebble store's memtables.", nil, nil)
	pebbleWALDesc = prometheus.NewDesc("basin_pebble_wal_bytes",
		"Size of the Pebble store's live write-ahead log.", nil, nil)
	pebbleL0FilesDesc = prometheus.NewDesc("basin_pebble_l0_files",
		"Tables in level 0 of the Pebble store.", nil, nil)
	pebbleL0SublevelsDesc = prometheus.NewDesc("basin_pebble_l0_sublevels",
		"Sublevels of level 0 of the Pebble store: many mean compactions are behind.", nil, nil)
	pebbleReadAmpDesc = prometheus.NewDesc("basin_pebble_read_amplification",
		"Sublevels and levels a read of the Pebble store may visit.", nil, nil)
	pebbleDebtDesc = prometheus.NewDesc("basin_pebble_compaction_debt_bytes",
		"Bytes the Pebble store's compactions are estimated to have to rewrite to bring its levels into shape.", nil, nil)
	pebbleCompactionsDesc = prometheus.NewDesc("basin_pebble_compactions_total",
		"Compactions of the Pebble store since it opened.", nil, nil)
	pebbleFlushesDesc = prometheus.NewDesc("basin_pebble_flushes_total",
		"Memtable flushes of the Pebble store since it opened.", nil, nil)
	pebbleCacheBytesDesc = prometheus.NewDesc("basin_pebble_block_cache_bytes",
		"Memory of the Pebble store's block cache.", nil, nil)
	pebbleCacheDesc = prometheus.NewDesc("basin_pebble_block_cache_total",
		"Block reads of the Pebble store by whether the block cache held the block (hit, miss).", []string{"result"}, nil)
	pebbleStallsDesc = prometheus.NewDesc("basin_pebble_write_stalls_total",
		"Times the Pebble store stopped writes to wait for flushes or compactions.", nil, nil)
	pebbleStallSecondsDesc = prometheus.NewDesc("basin_pebble_write_stall_seconds_total",
		"Time the Pebble store's writes were stopped.", nil, nil)
	brokerConnsDesc = prometheus.NewDesc("basin_broker_connections",
		"Client connections the node's embedded broker holds open (only on a node that runs one).", nil, nil)
	brokerDiskDesc = prometheus.NewDesc("basin_broker_disk_bytes",
		"Size of the embedded broker's logs and state in its data dir.", nil, nil)
	brokerUpDesc = prometheus.NewDesc("basin_broker_accepting",
		"1 while the embedded broker takes new connections, 0 when accepting fails (out of file descriptors).", nil, nil)
	brokerDiskFullDesc = prometheus.NewDesc("basin_broker_disk_full",
		"1 once a write of the embedded broker's log or state met a full disk since the node started.", nil, nil)
	restoresDesc = prometheus.NewDesc("basin_restores_total",
		"Restores of this node's stores from their changelogs that had something to restore (a task starting, a replica moved here).", nil, nil)
	restoreOffsetsDesc = prometheus.NewDesc("basin_restore_changelog_offsets_total",
		"Changelog offsets those restores read (records, with their transaction markers).", nil, nil)
	restoreSecondsDesc = prometheus.NewDesc("basin_restore_seconds_total",
		"Time those restores took.", nil, nil)
	rebalancesDesc = prometheus.NewDesc("basin_rebalances_total",
		"Assignments this node received from its cluster's group (each rebalance it took part in).", nil, nil)
	peerAliveDesc = prometheus.NewDesc("basin_peer_alive",
		"1 while heartbeats say the peer is alive, 0 while it is down.", []string{"peer"}, nil)
	peerHeartbeatAgeDesc = prometheus.NewDesc("basin_peer_heartbeat_age_seconds",
		"Time since the peer's last heartbeat arrived.", []string{"peer"}, nil)
	rowCacheDesc = prometheus.NewDesc("basin_row_cache_total",
		"Point reads of the row cache: hit (answered from memory) or miss (read from storage, then cached).", []string{"result"}, nil)
	rowCacheBytesDesc = prometheus.NewDesc("basin_row_cache_bytes",
		"Memory the row cache's entries take (keys, values and per-entry overhead), at most --row-cache-mb.", nil, nil)
	rowCacheEntriesDesc = prometheus.NewDesc("basin_row_cache_entries",
		"Rows in the row cache.", nil, nil)
	scanCacheDesc = prometheus.NewDesc("basin_scan_cache_total",
		"Whole-partition scans and the scan cache: hit (rows served from memory) or fill (rows read from storage were kept).", []string{"result"}, nil)
	scanCacheBytesDesc = prometheus.NewDesc("basin_scan_cache_bytes",
		"Estimated memory of the partitions' rows the scan cache keeps, at most --scan-cache-mb.", nil, nil)
	planCacheDesc = prometheus.NewDesc("basin_plan_cache_total",
		"What the simple-query plan caches of this node's sessions did: hit (a query ran from a cached plan), cached (a query shape was cached), uncacheable (a shape was found not cacheable).", []string{"result"}, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- taskOffsetLagDesc
	ch <- taskTimeLagDesc
	ch <- taskMisplacedDesc
	ch <- taskRecordsInDesc
	ch <- taskBytesInDesc
	ch <- taskRecordsOutDesc
	ch <- taskBytesOutDesc
	ch <- taskTransactionsDesc
	ch <- processingLogDesc
	for _, d := range pebbleDescs {
		ch <- d
	}
	ch <- brokerConnsDesc
	ch <- brokerDiskDesc
	ch <- brokerUpDesc
	ch <- brokerDiskFullDesc
	ch <- restoresDesc
	ch <- restoreOffsetsDesc
	ch <- restoreSecondsDesc
	ch <- rebalancesDesc
	ch <- peerAliveDesc
	ch <- peerHeartbeatAgeDesc
	ch <- planCacheDesc
	ch <- rowCacheDesc
	ch <- rowCacheBytesDesc
	ch <- rowCacheEntriesDesc
	ch <- scanCacheDesc
	ch <- scanCacheBytesDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	if e := c.n.engine; e != nil {
		pc := e.PlanCacheStats()
		ch <- prometheus.MustNewConstMetric(planCacheDesc, prometheus.CounterValue, float64(pc.Hits), "hit")
		ch <- prometheus.MustNewConstMetric(planCacheDesc, prometheus.CounterValue, float64(pc.Cached), "cached")
		ch <- prometheus.MustNewConstMetric(planCacheDesc, prometheus.CounterValue, float64(pc.Uncacheable), "uncacheable")
	}
	if db := c.n.db; db != nil {
		rc := db.RowCacheStats()
		ch <- prometheus.MustNewConstMetric(rowCacheDesc, prometheus.CounterValue, float64(rc.Hits), "hit")
		ch <- prometheus.MustNewConstMetric(rowCacheDesc, prometheus.CounterValue, float64(rc.Misses), "miss")
		ch <- prometheus.MustNewConstMetric(rowCacheBytesDesc, prometheus.GaugeValue, float64(rc.Bytes))
		ch <- prometheus.MustNewConstMetric(rowCacheEntriesDesc, prometheus.GaugeValue, float64(rc.Entries))
		sc := db.ScanCacheStats()
		ch <- prometheus.MustNewConstMetric(scanCacheDesc, prometheus.CounterValue, float64(sc.Hits), "hit")
		ch <- prometheus.MustNewConstMetric(scanCacheDesc, prometheus.CounterValue, float64(sc.Fills), "fill")
		ch <- prometheus.MustNewConstMetric(scanCacheBytesDesc, prometheus.GaugeValue, float64(sc.Bytes))
		collectStorage(ch, db.StorageStats())
	}
	if b := c.n.broker; b != nil {
		bs := b.Stats()
		ch <- prometheus.MustNewConstMetric(brokerConnsDesc, prometheus.GaugeValue, float64(bs.Connections))
		ch <- prometheus.MustNewConstMetric(brokerDiskDesc, prometheus.GaugeValue, float64(bs.DiskBytes))
		ch <- prometheus.MustNewConstMetric(brokerUpDesc, prometheus.GaugeValue, boolGauge(bs.Accepting))
		ch <- prometheus.MustNewConstMetric(brokerDiskFullDesc, prometheus.GaugeValue, boolGauge(bs.DiskFull))
	}
	if c.n.rt != nil {
		rs := c.n.rt.Restores()
		ch <- prometheus.MustNewConstMetric(restoresDesc, prometheus.CounterValue, float64(rs.Restores))
		ch <- prometheus.MustNewConstMetric(restoreOffsetsDesc, prometheus.CounterValue, float64(rs.Offsets))
		ch <- prometheus.MustNewConstMetric(restoreSecondsDesc, prometheus.CounterValue, rs.Took.Seconds())
		for _, pc := range c.n.rt.ProcessingLogCounts() {
			ch <- prometheus.MustNewConstMetric(processingLogDesc, prometheus.CounterValue, float64(pc.Records), pc.Relation, pc.SQLSTATE)
		}
	}
	if cl := c.n.clusterOf(); cl != nil {
		ch <- prometheus.MustNewConstMetric(rebalancesDesc, prometheus.CounterValue, float64(cl.rebalanceCount()))
	}
	if c.n.rt != nil {
		for _, t := range c.n.rt.Tasks(now) {
			labels := []string{t.Task, t.Relation, t.Role, t.State}
			ch <- prometheus.MustNewConstMetric(taskOffsetLagDesc, prometheus.GaugeValue, float64(t.OffsetLag), labels...)
			ch <- prometheus.MustNewConstMetric(taskTimeLagDesc, prometheus.GaugeValue, float64(t.TimeLagMs)/1000, labels...)
			if t.Store != "" {
				ch <- prometheus.MustNewConstMetric(taskMisplacedDesc, prometheus.CounterValue, float64(t.Misplaced), t.Task, t.Relation, t.Role)
			}
			ch <- prometheus.MustNewConstMetric(taskRecordsInDesc, prometheus.CounterValue, float64(t.RecordsIn), t.Task, t.Relation, t.Role)
			ch <- prometheus.MustNewConstMetric(taskBytesInDesc, prometheus.CounterValue, float64(t.BytesIn), t.Task, t.Relation, t.Role)
			ch <- prometheus.MustNewConstMetric(taskRecordsOutDesc, prometheus.CounterValue, float64(t.RecordsOut), t.Task, t.Relation, t.Role)
			ch <- prometheus.MustNewConstMetric(taskBytesOutDesc, prometheus.CounterValue, float64(t.BytesOut), t.Task, t.Relation, t.Role)
			ch <- prometheus.MustNewConstMetric(taskTransactionsDesc, prometheus.CounterValue, float64(t.Committed), t.Task, t.Relation, t.Role, "committed")
			ch <- prometheus.MustNewConstMetric(taskTransactionsDesc, prometheus.CounterValue, float64(t.Aborted), t.Task, t.Relation, t.Role, "aborted")
		}
	}
	if ctl := c.n.controlOf(); ctl != nil {
		for peer, l := range ctl.live.Status(now) {
			alive := 0.0
			if l.Alive {
				alive = 1
			}
			ch <- prometheus.MustNewConstMetric(peerAliveDesc, prometheus.GaugeValue, alive, peer)
			if !l.LastHeartbeat.IsZero() {
				ch <- prometheus.MustNewConstMetric(peerHeartbeatAgeDesc, prometheus.GaugeValue, now.Sub(l.LastHeartbeat).Seconds(), peer)
			}
		}
	}
}

var pebbleDescs = []*prometheus.Desc{pebbleDiskDesc, pebbleMemtableDesc, pebbleWALDesc, pebbleL0FilesDesc, pebbleL0SublevelsDesc,
	pebbleReadAmpDesc, pebbleDebtDesc, pebbleCompactionsDesc, pebbleFlushesDesc, pebbleCacheBytesDesc, pebbleCacheDesc,
	pebbleStallsDesc, pebbleStallSecondsDesc}

// collectStorage reports the Pebble store's key figures.
func collectStorage(ch chan<- prometheus.Metric, s materialize.StorageStats) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(pebbleDiskDesc, float64(s.DiskBytes))
	gauge(pebbleMemtableDesc, float64(s.MemtableBytes))
	gauge(pebbleWALDesc, float64(s.WALBytes))
	gauge(pebbleL0FilesDesc, float64(s.L0Files))
	gauge(pebbleL0SublevelsDesc, float64(s.L0Sublevels))
	gauge(pebbleReadAmpDesc, float64(s.ReadAmp))
	gauge(pebbleDebtDesc, float64(s.CompactionDebtBytes))
	counter(pebbleCompactionsDesc, float64(s.Compactions))
	counter(pebbleFlushesDesc, float64(s.Flushes))
	gauge(pebbleCacheBytesDesc, float64(s.BlockCacheBytes))
	counter(pebbleCacheDesc, float64(s.BlockCacheHits), "hit")
	counter(pebbleCacheDesc, float64(s.BlockCacheMisses), "miss")
	counter(pebbleStallsDesc, float64(s.WriteStalls))
	counter(pebbleStallSecondsDesc, s.WriteStallTime.Seconds())
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
