package stream

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// ProcessingLogSchema is the schema of the processing log stream, in
// which every source record a query skipped is recorded with why.
var ProcessingLogSchema = catalog.Schema{Columns: []catalog.Column{
	{Name: "logged_at", Type: catalog.Timestamp},
	{Name: "query_id", Type: catalog.Varchar},
	{Name: "node", Type: catalog.Varchar},
	{Name: "source", Type: catalog.Varchar},
	{Name: "source_partition", Type: catalog.Int},
	{Name: "source_offset", Type: catalog.BigInt},
	{Name: "error", Type: catalog.Varchar},
	{Name: "record_key", Type: catalog.Varchar},
	{Name: "record_value", Type: catalog.Varchar},
}}

// maxLoggedBytes bounds how much of a bad record the log keeps.
const maxLoggedBytes = 1024

type plogEntry struct {
	LoggedAt        int64  `json:"logged_at"`
	QueryID         string `json:"query_id"`
	Node            string `json:"node"`
	Source          string `json:"source"`
	SourcePartition int32  `json:"source_partition"`
	SourceOffset    int64  `json:"source_offset"`
	Error           string `json:"error"`
	RecordKey       string `json:"record_key,omitempty"`
	RecordValue     string `json:"record_value,omitempty"`
}

// badRecord builds the processing-log record for a skipped source record.
func (rt *Runtime) badRecord(rel *catalog.Relation, r *kgo.Record, cause error) *kgo.Record {
	e := plogEntry{
		LoggedAt:        time.Now().UnixMilli(),
		QueryID:         rel.QueryName(),
		Node:            rt.opts.Node,
		Source:          r.Topic,
		SourcePartition: r.Partition,
		SourceOffset:    r.Offset,
		Error:           cause.Error(),
		RecordKey:       printable(r.Key),
		RecordValue:     printable(r.Value),
	}
	rt.recentBad.add(e)
	rt.plogCounts.add(rel.Name, cause)
	b, _ := json.Marshal(e)
	rt.log.Debug("skipping bad record", "query", e.QueryID, "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", cause)
	return &kgo.Record{Topic: catalog.ProcessingLogTopic(rt.opts.Cluster), Partition: 0, Value: b}
}

// ProcessingLogEntry is a record of the processing log as this node's
// tasks wrote it.
type ProcessingLogEntry struct {
	LoggedAt        time.Time `json:"logged_at"`
	Query           string    `json:"query"`
	Node            string    `json:"node"`
	Source          string    `json:"source"`
	SourcePartition int32     `json:"source_partition"`
	SourceOffset    int64     `json:"source_offset"`
	Error           string    `json:"error"`
}

// plogCounts count the processing-log records this node's tasks wrote,
// by relation and SQLSTATE.
type plogCounts struct {
	m sync.Map // plogReason -> *atomic.Int64
}

type plogReason struct{ relation, sqlstate string }

func (c *plogCounts) add(relation string, cause error) {
	code := string(pgerr.InternalError)
	if pe, ok := asPgError(cause); ok {
		code = string(pe.Code)
	}
	k := plogReason{relation, code}
	n, ok := c.m.Load(k)
	if !ok {
		n, _ = c.m.LoadOrStore(k, new(atomic.Int64))
	}
	n.(*atomic.Int64).Add(1)
}

// ProcessingLogCount is how many records this node's tasks wrote to the
// processing log for one relation and reason.
type ProcessingLogCount struct {
	Relation string
	// SQLSTATE is the reason's code: 22P02 for a value that does not
	// parse, 54000 for a result too large for its topic, and so on.
	SQLSTATE string
	Records  int64
}

// ProcessingLogCounts returns the records this node's tasks wrote to the
// processing log since it started, by relation and reason (those of
// transactions that were aborted and retried count each time).
func (rt *Runtime) ProcessingLogCounts() []ProcessingLogCount {
	var out []ProcessingLogCount
	rt.plogCounts.m.Range(func(k, v any) bool {
		r := k.(plogReason)
		out = append(out, ProcessingLogCount{Relation: r.relation, SQLSTATE: r.sqlstate, Records: v.(*atomic.Int64).Load()})
		return true
	})
	slices.SortFunc(out, func(a, b ProcessingLogCount) int {
		return cmp.Or(cmp.Compare(a.Relation, b.Relation), cmp.Compare(a.SQLSTATE, b.SQLSTATE))
	})
	return out
}

// maxRecentBad is how many processing-log records a node remembers.
const maxRecentBad = 20

// recentBad holds the last processing-log records of this node, each
// source record once (a batch retried after an abort logs its records
// again).
type recentBad struct {
	mu      sync.Mutex
	entries []ProcessingLogEntry // latest first
}

func (r *recentBad) add(e plogEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.entries {
		if o.Query == e.QueryID && o.Source == e.Source && o.SourcePartition == e.SourcePartition && o.SourceOffset == e.SourceOffset {
			return
		}
	}
	r.entries = append([]ProcessingLogEntry{{LoggedAt: time.UnixMilli(e.LoggedAt), Query: e.QueryID, Node: e.Node, Source: e.Source,
		SourcePartition: e.SourcePartition, SourceOffset: e.SourceOffset, Error: e.Error}}, r.entries...)
	if len(r.entries) > maxRecentBad {
		r.entries = r.entries[:maxRecentBad]
	}
}

// RecentProcessingLog returns the last records this node's tasks wrote to
// the processing log, latest first: those of transactions that were
// aborted and not retried too, since they are noted as they are made.
func (rt *Runtime) RecentProcessingLog() []ProcessingLogEntry {
	rt.recentBad.mu.Lock()
	defer rt.recentBad.mu.Unlock()
	return slices.Clone(rt.recentBad.entries)
}

// printable returns b as text when it is UTF-8 without control
// characters other than whitespace, else as \x and hex digits (binary keys,
// such as a BIGINT in key_format 'kafka'); cut to maxLoggedBytes.
func printable(b []byte) string {
	if len(b) > maxLoggedBytes {
		b = b[:maxLoggedBytes]
	}
	if utf8.Valid(b) && !bytes.ContainsFunc(b, func(r rune) bool {
		return unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r'
	}) {
		return string(b)
	}
	return "\\x" + hexString(b)
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}
