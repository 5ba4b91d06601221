package serde

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// Arrays, STRUCTs and MAPs in JSON records, as ksqlDB writes them: an
// array is a JSON array, a STRUCT a JSON object with a field per struct
// field, a MAP a JSON object with a field per entry. Reading is lenient
// as it is for columns: a struct's fields match the object's names
// exactly or else ignoring case (ambiguity is an error), missing fields
// are NULL and extra ones are ignored; each element, field and entry
// value converts as a column of its type would. The recursion follows
// the column's type, which catalog bounds (MaxNestingDepth), not the
// record, so a deep record cannot take it deeper.

// decodeJSONNested converts a valid, non-null JSON value to a value of
// the array, STRUCT or MAP type t; ok is false for any other type.
func decodeJSONNested(raw []byte, t catalog.Type) (v any, ok bool, cerr *convError) {
	switch {
	case t.IsArray():
		v, cerr = decodeJSONArray(raw, t)
	case t.IsStruct():
		v, cerr = decodeJSONStruct(raw, t)
	case t.IsMap():
		v, cerr = decodeJSONMap(raw, t)
	default:
		return nil, false, nil
	}
	return v, true, cerr
}

func decodeJSONArray(raw []byte, t catalog.Type) (any, *convError) {
	if raw[0] != '[' {
		return nil, mismatch(t, raw)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, mismatch(t, raw)
	}
	out := make([]any, len(elems))
	for i, e := range elems {
		v, cerr := decodeJSONScalar(e, t.Elem())
		if cerr != nil {
			return nil, cerr.within("element " + strconv.Itoa(i+1))
		}
		out[i] = v
	}
	return out, nil
}

func decodeJSONStruct(raw []byte, t catalog.Type) (any, *convError) {
	if raw[0] != '{' {
		return nil, mismatch(t, raw)
	}
	obj, err := parseJSONObject(raw, "struct")
	if err != nil {
		return nil, mismatch(t, raw)
	}
	fields := t.Fields()
	out := make(catalog.Struct, len(fields))
	for i, f := range fields {
		_, fraw, err := obj.lookup(f.Name, "struct "+snippet(raw))
		if err != nil {
			e, _ := pgerr.As(err)
			return nil, &convError{pgerr.InvalidTextRepresentation, e.Message}
		}
		if fraw == nil {
			continue
		}
		v, cerr := decodeJSONScalar(fraw, f.Type)
		if cerr != nil {
			return nil, cerr.within(fmt.Sprintf("struct field %q", f.Name))
		}
		out[i] = v
	}
	return out, nil
}

func decodeJSONMap(raw []byte, t catalog.Type) (any, *convError) {
	if raw[0] != '{' {
		return nil, mismatch(t, raw)
	}
	obj, err := parseJSONObject(raw, "map")
	if err != nil {
		return nil, mismatch(t, raw)
	}
	entries := make([]catalog.MapEntry, 0, len(obj.fields))
	for k, fraw := range obj.fields {
		v, cerr := decodeJSONScalar(fraw, t.Value())
		if cerr != nil {
			return nil, cerr.within(fmt.Sprintf("map key %q", k))
		}
		entries = append(entries, catalog.MapEntry{Key: k, Value: v})
	}
	return catalog.NewMap(entries), nil
}

// within says where in a nested value a conversion failed.
func (e *convError) within(where string) *convError {
	return &convError{e.code, where + ": " + e.msg}
}

// appendJSONNested appends v, a value of the STRUCT or MAP type t, as a
// JSON object; ok is false for any other type.
func appendJSONNested(buf []byte, t catalog.Type, name string, v any) (out []byte, ok bool, err error) {
	switch {
	case t.IsStruct():
		s, isStruct := v.(catalog.Struct)
		fields := t.Fields()
		if !isStruct || len(s) != len(fields) {
			return nil, true, badGoValue(name, t, v)
		}
		buf = append(buf, '{')
		for i, f := range fields {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, f.Name)
			buf = append(buf, ':')
			if buf, err = appendJSONValue(buf, f.Type, name, s[i]); err != nil {
				return nil, true, err
			}
		}
		return append(buf, '}'), true, nil
	case t.IsMap():
		m, isMap := v.(catalog.Map)
		if !isMap {
			return nil, true, badGoValue(name, t, v)
		}
		buf = append(buf, '{')
		for i, e := range m {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, e.Key)
			buf = append(buf, ':')
			if buf, err = appendJSONValue(buf, t.Value(), name, e.Value); err != nil {
				return nil, true, err
			}
		}
		return append(buf, '}'), true, nil
	}
	return buf, false, nil
}
