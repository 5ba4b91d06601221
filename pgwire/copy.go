package pgwire

import (
	"errors"
	"fmt"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/pgcodec"
	"github.com/jackc/pgx/v5/pgproto3"
)

// COPY ... TO STDOUT.
//
// The engine runs the statement and reports CopyOut instead of Columns;
// from there the result is the copy sub-protocol: CopyOutResponse (text,
// every column text: basin writes no binary COPY), one CopyData per row
// holding one line of the text or csv format (pgcodec.AppendCopyRow, the
// same text output as DataRows, TIMESTAMPTZ in the session's TimeZone),
// then CopyDone and CommandComplete from Complete. In the extended
// protocol the same messages are Execute's answer (Describe of a COPY
// is NoData, as in Postgres), and a row limit does not apply.
//
// Rows are encoded straight into the writer's buffer, like DataRows, so
// the flush policy is the same: every 64 KiB, or at the engine's Flush,
// which a COPY of a live source calls after each batch so the client
// sees rows as they come. An error instead of Complete is sent as an
// ErrorResponse without CopyDone, which ends the copy on the client's
// side too.

// CopyOut implements ResultWriter.
func (r *resultWriter) CopyOut(cols []catalog.Column, format *pgcodec.CopyFormat) error {
	if r.inResult {
		return errors.New("pgwire: CopyOut called inside a result")
	}
	if format == nil {
		return errors.New("pgwire: CopyOut called without a format")
	}
	if err := format.Validate(); err != nil {
		return fmt.Errorf("pgwire: CopyOut: %w", err)
	}
	if len(cols) > maxColumns {
		return fmt.Errorf("pgwire: CopyOut of %d columns", len(cols))
	}
	if format.ForceQuote != nil && len(format.ForceQuote) != len(cols) {
		return fmt.Errorf("pgwire: CopyOut: ForceQuote has %d entries for %d columns", len(format.ForceQuote), len(cols))
	}
	r.types = r.types[:0]
	names := make([]string, len(cols))
	for i, c := range cols {
		r.types = append(r.types, c.Type)
		names[i] = c.Name
	}
	r.formats = nil
	r.inResult = true
	r.copyFmt = format
	r.syncZone()
	if err := r.w.send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, len(cols))}); err != nil {
		return err
	}
	if !format.Header {
		return nil
	}
	return r.sendCopyData(func(b []byte) ([]byte, error) {
		return pgcodec.AppendCopyHeader(b, names, format), nil
	})
}

// copyRow sends vals as one CopyData line.
func (r *resultWriter) copyRow(vals []any) error {
	if len(vals) != len(r.types) {
		return fmt.Errorf("pgwire: Row has %d values for %d columns", len(vals), len(r.types))
	}
	return r.sendCopyData(func(b []byte) ([]byte, error) {
		loc := r.loc
		if !r.zoned {
			loc = nil
		}
		b, err := pgcodec.AppendCopyRow(b, r.types, vals, r.copyFmt, loc)
		if err != nil {
			return b, fmt.Errorf("pgwire: Row: %w", err)
		}
		return b, nil
	})
}

// sendCopyData frames what line appends as a CopyData message in the
// writer's buffer; on an error the buffer is left as it was.
func (r *resultWriter) sendCopyData(line func([]byte) ([]byte, error)) error {
	if r.w.err != nil {
		return r.w.err
	}
	start := len(r.w.buf)
	b := append(r.w.buf, 'd', 0, 0, 0, 0)
	b, err := line(b)
	if err != nil {
		r.w.buf = b[:start]
		return err
	}
	n := len(b) - start - 1
	b[start+1], b[start+2], b[start+3], b[start+4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	r.w.buf = b
	return r.w.added()
}
