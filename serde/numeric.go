package serde

// NUMERIC in JSON records. A JSON number is read from its text, never
// through a float64, so 0.1 stays 0.1 and 12345678901234567890.12 keeps
// every digit; a string holding a number ("1.50", " 2 ", "NaN",
// "Infinity") is read too, as ksqlDB reads numbers sent as strings.
// Written, a finite value is a JSON number with exactly its digits
// (1.50, not 1.5); NaN and the infinities, which JSON numbers cannot
// be, are the strings "NaN", "Infinity" and "-Infinity", as DOUBLE's.

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
)

// decodeJSONColumn is decodeJSONScalar for column c: a NUMERIC(p,s)
// value is rounded to its scale, or refused when it has too many
// digits, as Postgres stores it.
func decodeJSONColumn(raw []byte, c catalog.Column) (any, *convError) {
	v, cerr := decodeJSONScalar(raw, c.Type)
	if cerr != nil || v == nil || c.Type != catalog.Decimal || c.Precision <= 0 {
		return v, cerr
	}
	d, err := numeric.ApplyTypmod(v.(*apd.Decimal), c.Precision, c.Scale)
	if err != nil {
		e, _ := pgerr.As(err)
		msg := err.Error()
		if e != nil {
			msg = fmt.Sprintf("%s (%s)", e.Message, e.Detail)
		}
		return nil, &convError{pgerr.NumericValueOutOfRange, fmt.Sprintf("%s does not fit %s: %s", describeJSON(raw), c.TypeString(), msg)}
	}
	return d, nil
}

// decodeJSONDecimal reads a JSON number, or a string holding a number or
// NaN or an infinity, as a numeric.
func decodeJSONDecimal(raw []byte) (any, *convError) {
	text, ok := numberText(raw)
	if !ok {
		if raw[0] != '"' {
			return nil, mismatch(catalog.Decimal, raw)
		}
		s := strings.TrimSpace(jsonString(raw))
		switch strings.ToLower(strings.TrimLeft(s, "+-")) {
		case "nan", "inf", "infinity":
		default:
			return nil, mismatch(catalog.Decimal, raw)
		}
		text = []byte(s)
	}
	d, err := numeric.Parse(string(text))
	if err != nil {
		if pgerr.CodeOf(err) == pgerr.NumericValueOutOfRange {
			return nil, &convError{pgerr.NumericValueOutOfRange, fmt.Sprintf("%s is out of range for NUMERIC", describeJSON(raw))}
		}
		return nil, mismatch(catalog.Decimal, raw)
	}
	return d, nil
}

// appendJSONDecimal writes d as a JSON number with its exact digits;
// NaN and the infinities as strings.
func appendJSONDecimal(buf []byte, d *apd.Decimal) []byte {
	if d.Form != apd.Finite {
		buf = append(buf, '"')
		buf = numeric.Append(buf, d)
		return append(buf, '"')
	}
	return numeric.Append(buf, d)
}
