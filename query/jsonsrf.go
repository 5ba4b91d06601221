package query

import (
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/jsonb"
	"github.com/basindb/basin/internal/pgerr"
)

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
