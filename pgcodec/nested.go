package pgcodec

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/jsonb"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
)

// STRUCT and MAP values on the wire: Postgres has no such types, so
// both are jsonb (oid 3802) and arrays of them jsonb[] (3807): a STRUCT
// is an object of its fields, a MAP an object of its entries, written as
// jsonb writes objects (keys ordered by length, then bytes; Postgres's
// spacing), in text and in binary (jsonb's version byte, then the text).
// A value inside one is what to_jsonb makes of it: numbers, booleans,
// strings and nulls as themselves, arrays as arrays, a timestamp in ISO
// 8601 with a T, a NaN or infinity as a string, anything else as the
// string of its text output. Parameters of these types are not taken:
// a client sends jsonb, which the SQL casts to the column's type.

// NestedJSONB is the jsonb value of v, a value of type t: a STRUCT or a
// MAP, an array, or a scalar inside one of them.
func NestedJSONB(t catalog.Type, v any) (jsonb.Value, error) { return nestedJSON(t, v, true) }

// NestedJSON is NestedJSONB with a STRUCT's fields in their order and a
// MAP's entries in key order, as JSON (not jsonb) keeps them: what
// ksqlDB's TO_JSON_STRING writes.
func NestedJSON(t catalog.Type, v any) (jsonb.Value, error) { return nestedJSON(t, v, false) }

func nestedJSON(t catalog.Type, v any, canon bool) (jsonb.Value, error) {
	switch x := v.(type) {
	case nil:
		return jsonb.Value{Kind: jsonb.Null}, nil
	case bool:
		return jsonb.Value{Kind: jsonb.Bool, Bool: x}, nil
	case int64:
		return jsonb.Value{Kind: jsonb.Number, Str: fmt.Sprint(x)}, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return jsonb.Value{Kind: jsonb.String, Str: string(AppendFloat8(nil, x))}, nil
		}
		return jsonb.Value{Kind: jsonb.Number, Str: jsonb.CanonicalNumber(string(AppendFloat8(nil, x)))}, nil
	case *apd.Decimal:
		if x.Form != apd.Finite {
			return jsonb.Value{Kind: jsonb.String, Str: numeric.Text(x)}, nil
		}
		return jsonb.Value{Kind: jsonb.Number, Str: jsonb.CanonicalNumber(numeric.Text(x))}, nil
	case string:
		return jsonb.Value{Kind: jsonb.String, Str: x}, nil
	case time.Time:
		s := x.UTC().Format("2006-01-02T15:04:05.999999")
		if t == catalog.TimestampTZ {
			s += "+00:00"
		}
		return jsonb.Value{Kind: jsonb.String, Str: s}, nil
	case catalog.JSONText:
		return jsonb.Parse(string(x))
	case []any:
		arr := jsonb.Value{Kind: jsonb.Array, Elems: make([]jsonb.Value, len(x))}
		for i, e := range x {
			ev, err := nestedJSON(t.Elem(), e, canon)
			if err != nil {
				return jsonb.Value{}, err
			}
			arr.Elems[i] = ev
		}
		return arr, nil
	case catalog.Struct:
		fields := t.Fields()
		if len(fields) != len(x) {
			return jsonb.Value{}, fmt.Errorf("a struct of %d values is not a %s", len(x), t)
		}
		keys := make([]string, len(x))
		vals := make([]jsonb.Value, len(x))
		for i, f := range fields {
			fv, err := nestedJSON(f.Type, x[i], canon)
			if err != nil {
				return jsonb.Value{}, err
			}
			keys[i], vals[i] = f.Name, fv
		}
		return jsonb.NewObject(keys, vals, canon), nil
	case catalog.Map:
		keys := make([]string, len(x))
		vals := make([]jsonb.Value, len(x))
		for i, e := range x {
			ev, err := nestedJSON(t.Value(), e.Value, canon)
			if err != nil {
				return jsonb.Value{}, err
			}
			keys[i], vals[i] = e.Key, ev
		}
		return jsonb.NewObject(keys, vals, canon), nil
	}
	out, err := AppendText(nil, t, v)
	if err != nil {
		return jsonb.Value{}, err
	}
	return jsonb.Value{Kind: jsonb.String, Str: string(out)}, nil
}

// appendTextNested is the text output of a STRUCT or MAP value; ok is
// false for another type.
func appendTextNested(b []byte, t catalog.Type, v any) ([]byte, bool, error) {
	if !t.IsNested() {
		return b, false, nil
	}
	switch v.(type) {
	case catalog.Struct, catalog.Map:
	default:
		return b, true, fmt.Errorf("cannot encode a Go %T as %s", v, t)
	}
	j, err := NestedJSONB(t, v)
	if err != nil {
		return b, true, err
	}
	return append(b, j.Text()...), true, nil
}

// FromJSONB converts the jsonb value j to a value of type t: a STRUCT
// from an object (fields by name, else ignoring case; missing fields
// NULL, extra ones ignored), a MAP from an object, an array from an
// array, and a scalar inside them from a JSON scalar (a string by its
// type's text input). It reads back what NestedJSONB writes, and is how
// jsonb and text become STRUCT and MAP values (casts, INSERT, a peer's
// rows).
func FromJSONB(t catalog.Type, j jsonb.Value) (any, error) {
	if j.Kind == jsonb.Null {
		return nil, nil
	}
	mismatch := func() error {
		return pgerr.New(pgerr.InvalidParameterValue, "cannot cast jsonb %s to type %s", j.Kind, t)
	}
	switch {
	case t.IsStruct():
		if j.Kind != jsonb.Object {
			return nil, mismatch()
		}
		fields := t.Fields()
		out := make(catalog.Struct, len(fields))
		for i, f := range fields {
			k := jsonKey(j.Keys, f.Name)
			if k < 0 {
				continue
			}
			fv, err := FromJSONB(f.Type, j.Vals[k])
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			out[i] = fv
		}
		return out, nil
	case t.IsMap():
		if j.Kind != jsonb.Object {
			return nil, mismatch()
		}
		entries := make([]catalog.MapEntry, len(j.Keys))
		for i, k := range j.Keys {
			v, err := FromJSONB(t.Value(), j.Vals[i])
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			entries[i] = catalog.MapEntry{Key: k, Value: v}
		}
		return catalog.NewMap(entries), nil
	case t.IsArray():
		if j.Kind != jsonb.Array {
			return nil, mismatch()
		}
		out := make([]any, len(j.Elems))
		for i, e := range j.Elems {
			v, err := FromJSONB(t.Elem(), e)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i+1, err)
			}
			out[i] = v
		}
		return out, nil
	case t == catalog.JSONB:
		return catalog.JSONText(j.Text()), nil
	case t == catalog.JSON:
		return catalog.JSONText(j.JSONText()), nil
	}
	var text string
	switch j.Kind {
	case jsonb.String:
		text = j.Str
	case jsonb.Number:
		text = j.Str
		if t == catalog.Boolean {
			return nil, mismatch()
		}
	case jsonb.Bool:
		if t != catalog.Boolean && t != catalog.Varchar {
			return nil, mismatch()
		}
		text = "false"
		if j.Bool {
			text = "true"
		}
	default:
		if t != catalog.Varchar {
			return nil, mismatch()
		}
		return j.Text(), nil
	}
	if t == catalog.Timestamp {
		return ParseTimestamp(text)
	}
	if v, ok, err := ParseText(t, text, time.UTC); ok {
		return v, err
	}
	if v, ok, err := CastText(text, t); ok {
		return v, err
	}
	return nil, mismatch()
}

// jsonKey is the index of the key of keys named name, else of the one
// key equal to it ignoring case, else -1.
func jsonKey(keys []string, name string) int {
	found := -1
	for i, k := range keys {
		if k == name {
			return i
		}
		if strings.EqualFold(k, name) {
			if found >= 0 {
				found = -2
			} else if found == -1 {
				found = i
			}
		}
	}
	return max(found, -1)
}

// NestedFromPeer converts what DecodePeer made of a peer's jsonb or
// jsonb[] value (catalog.JSONText, or []any of them) to a value of the
// nested type t, which the peer sent as such.
func NestedFromPeer(t catalog.Type, v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case catalog.JSONText:
		j, err := jsonb.Parse(string(x))
		if err != nil {
			return nil, err
		}
		return FromJSONB(t, j)
	case []any:
		if !t.IsArray() {
			break
		}
		out := make([]any, len(x))
		for i, e := range x {
			ev, err := NestedFromPeer(t.Elem(), e)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	}
	return nil, fmt.Errorf("pgcodec: a peer sent a %T for a %s value", v, t)
}
