package pull

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/pgcodec"
)

// wireEncoder turns stored rows straight into DataRow messages, without
// decoding them into Go values first, for the column types and formats
// whose wire form it knows: every common type in binary, and booleans,
// integers and text in text format (the text forms of doubles and
// timestamps are pgcodec's alone). It must agree byte for byte with
// pgcodec's encoders (TestWireEncoderMatchesAppendRow).
type wireEncoder struct {
	types   []catalog.Type
	formats []int16
	// cols are the stored columns encoded, in increasing order; nil for
	// the first len(types).
	cols []int
}

// errNotWire says a stored value is not of the kind its column's wire
// encoding expects (a row written before the column changed): the row
// takes the ordinary path.
var errNotWire = errors.New("exec: stored value needs the ordinary encoder")

// newWireEncoder returns the encoder of cols in formats, nil when a
// column's type and format are not ones it knows.
func newWireEncoder(cols []catalog.Column, formats []int16) *wireEncoder {
	return newWireEncoderOf(cols, nil, formats)
}

// newWireEncoderOf returns the encoder of the columns of a stored row of
// the relation's columns all whose indexes are idx (nil: the first
// len(formats)), in formats; nil when a column's type and format are not
// ones it knows, or idx is not in increasing order (the values are
// encoded as they are visited).
func newWireEncoderOf(all []catalog.Column, idx []int, formats []int16) *wireEncoder {
	n := len(formats)
	if idx == nil && n > len(all) || idx != nil && len(idx) != n {
		return nil
	}
	e := &wireEncoder{formats: formats, cols: idx}
	for i := range n {
		c := i
		if idx != nil {
			if c = idx[i]; c < 0 || c >= len(all) || i > 0 && c <= idx[i-1] {
				return nil
			}
		}
		switch t := all[c].Type; t {
		case catalog.Boolean, catalog.Int, catalog.BigInt, catalog.Varchar:
		case catalog.Double, catalog.Timestamp:
			if formats[i] != pgcodec.FormatBinary {
				return nil
			}
		case catalog.UUID, catalog.JSONB, catalog.JSON, catalog.Bytea:
		default:
			return nil
		}
		e.types = append(e.types, all[c].Type)
	}
	return e
}

// AppendStored appends the DataRow message of stored, a stored value
// (its presence flag, then the columns, then any aggregate state), to
// dst; scratch holds each value as it is visited (the encoder is shared,
// scratch is the caller's). present is false, and dst unchanged, for a
// value HAVING drops. errNotWire leaves dst unchanged too.
func (e *wireEncoder) AppendStored(dst, stored []byte, scratch *materialize.RowValue) (out []byte, present bool, err error) {
	start := len(dst)
	n := len(e.types)
	present = true
	// The stored values to visit: the flag, then up to the last column
	// encoded.
	limit := 1 + n
	if e.cols != nil {
		limit = 1 + e.cols[n-1] + 1
	}
	next := 0 // the next column to encode
	visited, err := materialize.VisitRowPrefixWith(stored, limit, scratch, func(i int, v *materialize.RowValue) error {
		if i == 0 {
			if v.Kind != materialize.RowBool || !v.Bool {
				present = false
				return errStop
			}
			dst = pgcodec.StartDataRow(dst, n)
			return nil
		}
		if e.cols != nil && e.cols[next] != i-1 {
			return nil // a column not sent
		}
		var err error
		dst, err = e.appendValue(dst, next, v)
		next++
		return err
	})
	switch {
	case err == errStop:
		return dst[:start], false, nil
	case err != nil:
		return dst[:start], false, err
	case visited < limit:
		return dst[:start], false, errNotWire // fewer values than columns
	}
	pgcodec.EndDataRow(dst, start)
	return dst, present, nil
}

// errStop ends a visit early.
var errStop = errors.New("stop")

// appendValue appends column c's length and wire form of v.
func (e *wireEncoder) appendValue(dst []byte, c int, v *materialize.RowValue) ([]byte, error) {
	if v.Kind == materialize.RowNull {
		return pgcodec.AppendNull(dst), nil
	}
	binFmt := e.formats[c] == pgcodec.FormatBinary
	at := len(dst)
	dst = pgcodec.StartValue(dst)
	switch t := e.types[c]; {
	case t == catalog.Boolean && v.Kind == materialize.RowBool:
		switch {
		case binFmt && v.Bool:
			dst = append(dst, 1)
		case binFmt:
			dst = append(dst, 0)
		case v.Bool:
			dst = append(dst, 't')
		default:
			dst = append(dst, 'f')
		}
	case (t == catalog.Int || t == catalog.BigInt) && v.Kind == materialize.RowInt:
		switch {
		case !binFmt:
			dst = strconv.AppendInt(dst, v.Int, 10)
		case t == catalog.Int:
			if v.Int < math.MinInt32 || v.Int > math.MaxInt32 {
				return dst[:at], errNotWire // pgcodec reports it
			}
			dst = binary.BigEndian.AppendUint32(dst, uint32(int32(v.Int)))
		default:
			dst = binary.BigEndian.AppendUint64(dst, uint64(v.Int))
		}
	case t == catalog.Double && v.Kind == materialize.RowFloat:
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v.Float))
	case t == catalog.Varchar && v.Kind == materialize.RowString:
		dst = append(dst, v.Bytes...)
	case t == catalog.Timestamp && v.Kind == materialize.RowTime:
		us, ok := pgcodec.TimestampMicros(v.Time)
		if !ok {
			return dst[:at], errNotWire // pgcodec reports it
		}
		dst = binary.BigEndian.AppendUint64(dst, uint64(us))
	case v.Kind == materialize.RowBlob:
		var ok bool
		if dst, ok = pgcodec.AppendBlobWire(dst, t, binFmt, v.Bytes); !ok {
			return dst[:at], errNotWire
		}
	default:
		return dst[:at], errNotWire
	}
	pgcodec.EndValue(dst, at)
	return dst, nil
}
