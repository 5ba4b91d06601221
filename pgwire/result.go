package pgwire

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/jackc/pgx/v5/pgproto3"
)

// resultWriter is the ResultWriter a Session reports a Query's or a
// portal's results to. It encodes each call as backend messages on the
// connection's writer: Columns → RowDescription, Row → DataRow,
// Complete → CommandComplete, Empty → EmptyQueryResponse, Notice →
// NoticeResponse (flushed at once, so a notice sent before a long wait
// reaches the client before the wait).
//
// A Query's rows are all in text format. A portal's (startPortal) are in
// the formats its Bind asked for, column by column, and its Columns call
// sends nothing: in the extended protocol RowDescription is Describe's
// answer, never Execute's, so Columns is only checked against what was
// described.
//
// One resultWriter lives as long as its connection and is reused for
// every statement; rows are encoded straight into the writer's buffer,
// so a scan of any length allocates nothing per row. Only the processing goroutine uses it.
//
// Misuse by the engine (Row before Columns, a value of the wrong Go type)
// is an error the Session is expected to return, which the client sees as
// XX000: it is a bug, and the stream stays well-formed.
type resultWriter struct {
	w *writer
	// c is the connection, for DEALLOCATE and DISCARD ALL (see
	// StatementCloser).
	c *conn

	// inResult is set between Columns and Complete.
	inResult bool
	// types are the column types of the current result's rows.
	types []catalog.Type
	// formats, in a portal, holds each column's format code; nil means
	// all text.
	formats []int16
	// described is set while a portal runs: its columns are fixed by
	// startPortal and Columns only checks them.
	described bool
	// ended is set by Complete and Empty: the statement reported its end.
	ended bool
	// copyFmt is set between CopyOut and Complete: rows are CopyData
	// lines in that format (copy.go).
	copyFmt *pgcodec.CopyFormat
	rdesc   pgproto3.RowDescription
	names   [][]byte // rdesc's column names, reused

	// zoned is set when a column of the current result is written in
	// the session's TimeZone (TIMESTAMPTZ); loc is that zone, named
	// zoneName (zone.go).
	zoned    bool
	loc      *time.Location
	zoneName string
}

var errNoColumns = errors.New("pgwire: Row called before Columns")

// reset forgets any open result and any portal's formats; it is called
// before each Query.
func (r *resultWriter) reset() {
	r.inResult = false
	r.types = r.types[:0]
	r.formats = nil
	r.described = false
	r.ended = false
	r.copyFmt = nil
}

// startPortal prepares for an Execute of a portal whose result has
// columns cols (nil: no rows) in formats (one per column).
func (r *resultWriter) startPortal(cols []catalog.Column, formats []int16) {
	r.reset()
	r.described = true
	r.formats = formats
	for _, c := range cols {
		r.types = append(r.types, c.Type)
	}
	r.inResult = cols != nil
	r.syncZone()
}

// Columns implements ResultWriter.
func (r *resultWriter) Columns(cols []catalog.Column) error {
	if r.described {
		if !r.inResult || len(cols) != len(r.types) {
			return fmt.Errorf("pgwire: Columns reports %d columns, Describe reported %d", len(cols), len(r.types))
		}
		for i, c := range cols {
			if c.Type != r.types[i] {
				return fmt.Errorf("pgwire: Columns reports column %d as %s, Describe reported %s", i+1, c.Type.PGName(), r.types[i].PGName())
			}
		}
		return nil
	}
	if r.inResult {
		return errors.New("pgwire: Columns called twice without Complete")
	}
	rd, err := r.rowDescription(cols, nil)
	if err != nil {
		return err
	}
	for _, col := range cols {
		r.types = append(r.types, col.Type)
	}
	r.inResult = true
	r.syncZone()
	return r.w.send(rd)
}

// rowDescription encodes cols, with their format codes (nil: all text),
// into the writer's reusable RowDescription.
func (r *resultWriter) rowDescription(cols []catalog.Column, formats []int16) (*pgproto3.RowDescription, error) {
	if len(cols) > maxColumns {
		return nil, pgerr.New(pgerr.ProgramLimitExceeded, "a result may have at most %d columns, this one has %d", maxColumns, len(cols))
	}
	fields := r.rdesc.Fields[:0]
	for i, col := range cols {
		format := pgcodec.FormatText
		if formats != nil {
			format = formats[i]
		}
		// The names' bytes are reused from the last RowDescription.
		var name []byte
		if i < len(r.names) {
			name = r.names[i][:0]
		} else {
			r.names = append(r.names, nil)
		}
		name = append(name, cstring(col.Name)...)
		r.names[i] = name
		fields = append(fields, pgproto3.FieldDescription{
			Name:         name,
			DataTypeOID:  col.Type.OID(),
			DataTypeSize: pgcodec.TypeLen(col.Type),
			TypeModifier: -1,
			Format:       format,
		})
	}
	r.rdesc.Fields = fields
	return &r.rdesc, nil
}

// maxColumns is the most columns RowDescription and DataRow can carry
// (their counts are 16-bit); Postgres's own limit is 1664.
const maxColumns = 1<<16 - 1

// Row implements ResultWriter: the DataRow goes into the writer's
// buffer, encoded in place.
func (r *resultWriter) Row(vals []any) error {
	if !r.inResult {
		return errNoColumns
	}
	if r.w.err != nil {
		return r.w.err
	}
	if r.copyFmt != nil {
		return r.copyRow(vals)
	}
	b, err := r.appendDataRow(r.w.buf, vals, "Row")
	r.w.buf = b
	if err != nil {
		return err
	}
	if len(r.w.buf) >= flushThreshold {
		return r.w.flush()
	}
	return nil
}

// WireFormats implements pull.RawRows: each result column's format
// code, 0 for text and 1 for binary.
func (r *resultWriter) WireFormats() []int16 {
	out := make([]int16, len(r.types))
	for i := range out {
		if r.formats != nil && r.formats[i] == pgcodec.FormatBinary {
			out[i] = pgcodec.FormatBinary
		}
	}
	return out
}

// AppendRow implements pull.RawRows: it appends the DataRow message of
// vals, in the result's column types and formats, to dst. It reads only
// those, which are fixed while the statement runs, so the readers of a
// scatter-gather encode their rows at the same time.
func (r *resultWriter) AppendRow(dst []byte, vals []any) ([]byte, error) {
	return r.appendDataRow(dst, vals, "AppendRow")
}

// appendDataRow appends the DataRow message of vals to dst; on an error
// (named after what, the caller) dst is returned as it was.
func (r *resultWriter) appendDataRow(dst []byte, vals []any, what string) ([]byte, error) {
	if len(vals) != len(r.types) {
		return dst, fmt.Errorf("pgwire: %s has %d values for %d columns", what, len(vals), len(r.types))
	}
	start := len(dst)
	dst = pgcodec.StartDataRow(dst, len(vals))
	// pgcodec.AppendValue's loop, written out: a call per value costs a
	// binary row about a sixth of its time (BenchmarkDataRow).
	for i, v := range vals {
		if v == nil {
			dst = pgcodec.AppendNull(dst)
			continue
		}
		at := len(dst)
		dst = pgcodec.StartValue(dst)
		var err error
		if r.formats != nil && r.formats[i] == pgcodec.FormatBinary {
			dst, err = pgcodec.AppendBinary(dst, r.types[i], v)
		} else if r.zoned {
			dst, err = pgcodec.AppendTextIn(dst, r.types[i], v, r.loc)
		} else {
			dst, err = pgcodec.AppendText(dst, r.types[i], v)
		}
		if err != nil {
			return dst[:start], fmt.Errorf("pgwire: %s: column %d: %w", what, i+1, err)
		}
		pgcodec.EndValue(dst, at)
	}
	pgcodec.EndDataRow(dst, start)
	return dst, nil
}

// WriteRows implements pull.RawRows: it writes DataRow messages that
// AppendRow encoded, or that a peer sent in the same types and formats.
func (r *resultWriter) WriteRows(b []byte, _ int) error {
	if !r.inResult {
		return errNoColumns
	}
	if r.copyFmt != nil {
		return errors.New("pgwire: WriteRows called during COPY")
	}
	return r.w.sendRaw(b)
}

// Complete implements ResultWriter.
func (r *resultWriter) Complete(tag string) error {
	copying := r.copyFmt != nil
	r.reset()
	r.ended = true
	if copying {
		if err := r.w.send(&pgproto3.CopyDone{}); err != nil {
			return err
		}
	}
	return r.w.sendCommandComplete(tag)
}

// Flush implements ResultWriter.
func (r *resultWriter) Flush() error { return r.w.flush() }

// Empty implements ResultWriter.
func (r *resultWriter) Empty() error {
	if r.inResult {
		return errors.New("pgwire: Empty called inside a row-returning result")
	}
	r.ended = true
	return r.w.send(&pgproto3.EmptyQueryResponse{})
}

// Notice implements ResultWriter.
func (r *resultWriter) Notice(n *pgerr.Error) error {
	if n == nil {
		return errors.New("pgwire: Notice called with nil")
	}
	if err := r.w.send(noticeResponse(n)); err != nil {
		return err
	}
	return r.w.flush()
}

// cstring makes s safe for the protocol's NUL-terminated strings (names,
// tags, messages): an embedded NUL would end the field early and
// desynchronize the client, so NULs are dropped.
func cstring(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "")
}
