package query

import (
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/jsonb"
	"github.com/basindb/basin/internal/pgerr"
)

// runJSONSRF runs the json set-returning functions (planner/jsonfuncs.go
// types them); ok is false for any other function. Arguments are
// non-NULL.
func runJSONSRF(name string, args []any) (out []any, ok bool, err error) {
	if !strings.HasPrefix(name, "json") {
		return nil, false, nil
	}
	src := strings.HasPrefix(name, "json_")
	text := strings.HasSuffix(name, "_text")
	s, isJSON := args[0].(catalog.JSONText)
	if !isJSON {
		return nil, false, nil
	}
	var v jsonb.Value
	if src {
		v, err = jsonb.ParseJSON(string(s))
	} else {
		v, err = jsonb.Parse(string(s))
	}
	if err != nil {
		return nil, true, err
	}
	value := func(e jsonb.Value) any {
		if text {
			t, ok := e.AsText(src)
			if !ok {
				return nil
			}
			return t
		}
		if src {
			return catalog.JSONText(e.JSONText())
		}
		return catalog.JSONText(e.Text())
	}
	base := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(name, "jsonb_"), "json_"), "_text")
	switch base {
	case "object_keys", "each":
		if v.Kind != jsonb.Object {
			switch {
			case base == "object_keys":
				return nil, true, pgerr.New(pgerr.InvalidParameterValue, "cannot call %s on %s", name, kindPhrase(v.Kind))
			case src:
				return nil, true, pgerr.New(pgerr.InvalidParameterValue, "cannot deconstruct %s", kindPhrase(v.Kind))
			}
			return nil, true, pgerr.New(pgerr.InvalidParameterValue, "cannot call %s on a non-object", name)
		}
		for i, k := range v.Keys {
			if base == "object_keys" {
				out = append(out, k)
			} else {
				out = append(out, []any{k, value(v.Vals[i])})
			}
		}
		return out, true, nil
	case "array_elements":
		if v.Kind != jsonb.Array {
			return nil, true, pgerr.New(pgerr.InvalidParameterValue, "cannot extract elements from %s", kindPhrase(v.Kind))
		}
		for _, e := range v.Elems {
			out = append(out, value(e))
		}
		return out, true, nil
	}
	return nil, false, nil
}

func kindPhrase(k jsonb.Kind) string {
	switch k {
	case jsonb.Array:
		return "an array"
	case jsonb.Object:
		return "an object"
	}
	return "a scalar"
}

// appendBlobKey is appendKey for uuid, json(b) and bytea values; false
// for any other value.
func appendBlobKey(b *strings.Builder, v any) bool {
	switch x := v.(type) {
	case catalog.UUIDVal:
		b.WriteString("u")
		b.Write(x[:])
	case catalog.JSONText:
		k := jsonb.EqualityKey(string(x))
		b.WriteString("j")
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
	case []byte:
		b.WriteString("b")
		b.WriteString(strconv.Itoa(len(x)))
		b.WriteByte(':')
		b.Write(x)
	default:
		return false
	}
	return true
}

// addJSON adds a row to a json aggregate: v is the value (of
// jsonb_agg) or the key (of the object aggregates, whose value is v2).
// Values are kept in st.vals as jsonb.Value, keys in st.parts.
func (st *aggState) addJSON(v, v2 any) error {
	src := strings.HasPrefix(st.spec.Func, "json_")
	if st.spec.Arg2 == nil {
		j, err := eval.ToJSON(v, st.spec.Arg.Type(), src)
		if err != nil {
			return err
		}
		st.vals = append(st.vals, j)
		return nil
	}
	if v == nil {
		return pgerr.New(pgerr.InvalidParameterValue, "field name must not be null")
	}
	k, err := eval.ToJSON(v, st.spec.Arg.Type(), false)
	if err != nil {
		return err
	}
	key := k.Str
	if k.Kind != jsonb.String {
		key = k.Text()
	}
	j, err := eval.ToJSON(v2, st.spec.Arg2.Type(), src)
	if err != nil {
		return err
	}
	st.parts = append(st.parts, key)
	st.vals = append(st.vals, j)
	return nil
}

// jsonResult is a json aggregate's value: NULL over no rows, as in
// Postgres; json_agg's elements apart by ", ", json_object_agg's
// members written { "k" : v, ... }.
func (st *aggState) jsonResult() any {
	if st.n == 0 {
		return nil
	}
	src := strings.HasPrefix(st.spec.Func, "json_")
	vals := make([]jsonb.Value, len(st.vals))
	for i, v := range st.vals {
		vals[i] = v.(jsonb.Value)
	}
	var b strings.Builder
	switch {
	case st.spec.Arg2 == nil && src:
		b.WriteByte('[')
		for i, v := range vals {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(v.JSONText())
		}
		b.WriteByte(']')
	case st.spec.Arg2 == nil:
		return catalog.JSONText(jsonb.Value{Kind: jsonb.Array, Elems: vals}.Canon().Text())
	case src:
		b.WriteString("{ ")
		for i, v := range vals {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(jsonb.Quote(st.parts[i]))
			b.WriteString(" : ")
			b.WriteString(v.JSONText())
		}
		b.WriteString(" }")
	default:
		return catalog.JSONText(jsonb.NewObject(st.parts, vals, true).Canon().Text())
	}
	return catalog.JSONText(b.String())
}
