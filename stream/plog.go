package stream

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
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
	b, _ := json.Marshal(e)
	rt.log.Debug("skipping bad record", "query", e.QueryID, "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", cause)
	return &kgo.Record{Topic: catalog.ProcessingLogTopic(rt.opts.Cluster), Partition: 0, Value: b}
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
