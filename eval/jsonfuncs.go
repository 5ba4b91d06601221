package eval

import (
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"math"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/jsonb"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/planner"
)

// Evaluation of the operators and functions of uuid, jsonb, json and
// bytea (planner/jsontypes.go and planner/jsonfuncs.go bind them).

// compareBlob is Compare for these types' values: uuid and bytea
// bytewise, jsonb in Postgres's jsonb order. 0 for other values.
func compareBlob(a, b any) int {
	switch x := a.(type) {
	case catalog.UUIDVal:
		if y, ok := b.(catalog.UUIDVal); ok {
			return bytes.Compare(x[:], y[:])
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y)
		}
	case catalog.JSONText:
		if y, ok := b.(catalog.JSONText); ok {
			if x == y {
				return 0
			}
			xv, err1 := jsonb.Parse(string(x))
			yv, err2 := jsonb.Parse(string(y))
			if err1 != nil || err2 != nil {
				return strings.Compare(string(x), string(y))
			}
			return jsonb.Compare(xv, yv)
		}
	}
	return 0
}

// parseJSON parses a json (src) or jsonb value.
func parseJSON(v any, src bool) (jsonb.Value, error) {
	s := string(v.(catalog.JSONText))
	if src {
		return jsonb.ParseJSON(s)
	}
	return jsonb.Parse(s)
}

// jsonOut is the value of a json or jsonb result.
func jsonOut(v jsonb.Value, src bool) any {
	if src {
		return catalog.JSONText(v.JSONText())
	}
	return catalog.JSONText(v.Text())
}

// jsonPath follows path (text elements; a NULL one gives NULL) from v,
// as #> and #>> and jsonb_extract_path[_text] do: the value there, its
// text with text, or NULL when there is none.
func jsonPath(v jsonb.Value, path []any, src, text bool) any {
	keys := make([]string, len(path))
	for i, p := range path {
		if p == nil {
			return nil
		}
		keys[i] = p.(string)
	}
	v, ok := v.Path(keys)
	if !ok {
		return nil
	}
	return jsonResult(v, src, text)
}

// jsonResult is the result of an extraction that found v: its text
// (NULL for a JSON null) with text, else the value.
func jsonResult(v jsonb.Value, src, text bool) any {
	if !text {
		return jsonOut(v, src)
	}
	s, ok := v.AsText(src)
	if !ok {
		return nil
	}
	return s
}

// compileBlobBinary compiles the json operators and || over jsonb and
// bytea; nil for any other operator.
func compileBlobBinary(s *planner.Binary, l, r Expr) Expr {
	src := s.L.Type() == catalog.JSON
	var op func(a, b any) (any, error)
	switch s.Op {
	case "->", "->>", "#>", "#>>":
		text := s.Op == "->>" || s.Op == "#>>"
		op = func(a, b any) (any, error) {
			v, err := parseJSON(a, src)
			if err != nil {
				return nil, err
			}
			var found bool
			switch k := b.(type) {
			case string:
				v, found = v.Field(k)
			case int64:
				v, found = v.Index(k)
			case []any:
				return jsonPath(v, k, src, text), nil
			}
			if !found {
				return nil, nil
			}
			return jsonResult(v, src, text), nil
		}
	case "@>", "<@":
		op = func(a, b any) (any, error) {
			x, err := parseJSON(a, false)
			if err != nil {
				return nil, err
			}
			y, err := parseJSON(b, false)
			if err != nil {
				return nil, err
			}
			if s.Op == "<@" {
				x, y = y, x
			}
			return jsonb.Contains(x, y), nil
		}
	case "?", "?|", "?&":
		op = func(a, b any) (any, error) {
			v, err := parseJSON(a, false)
			if err != nil {
				return nil, err
			}
			if k, ok := b.(string); ok {
				return v.Exists(k), nil
			}
			all := s.Op == "?&"
			for _, k := range b.([]any) {
				if k == nil {
					continue // Postgres skips NULL keys
				}
				if v.Exists(k.(string)) != all {
					return !all, nil
				}
			}
			return all, nil
		}
	case "-", "#-":
		if s.T != catalog.JSONB {
			return nil
		}
		op = func(a, b any) (any, error) {
			v, err := parseJSON(a, false)
			if err != nil {
				return nil, err
			}
			switch k := b.(type) {
			case string:
				v, err = v.DeleteKeys(k)
			case int64:
				v, err = v.DeleteIndex(k)
			case []any:
				if s.Op == "#-" {
					v, err = v.DeletePath(pathSteps(k))
					break
				}
				keys := make([]string, 0, len(k))
				for _, x := range k {
					if x != nil {
						keys = append(keys, x.(string))
					}
				}
				v, err = v.DeleteKeys(keys...)
			}
			if err != nil {
				return nil, err
			}
			return catalog.JSONText(v.Text()), nil
		}
	case "||":
		switch s.T {
		case catalog.JSONB:
			op = func(a, b any) (any, error) {
				x, err := parseJSON(a, false)
				if err != nil {
					return nil, err
				}
				y, err := parseJSON(b, false)
				if err != nil {
					return nil, err
				}
				return catalog.JSONText(jsonb.Concat(x, y).Text()), nil
			}
		case catalog.Bytea:
			op = func(a, b any) (any, error) {
				x, y := a.([]byte), b.([]byte)
				return append(append(make([]byte, 0, len(x)+len(y)), x...), y...), nil
			}
		}
	}
	if op == nil {
		return nil
	}
	return func(row catalog.Row, env *Env) (any, error) {
		a, err := l(row, env)
		if a == nil || err != nil {
			return nil, err
		}
		b, err := r(row, env)
		if b == nil || err != nil {
			return nil, err
		}
		return op(a, b)
	}
}

// compileBlobCall compiles the functions of planner/jsonfuncs.go; nil
// for any other.
func compileBlobCall(s *planner.Call, args []Expr) Expr {
	types := make([]catalog.Type, len(s.Args))
	for i, a := range s.Args {
		types[i] = a.Type()
	}
	var fn func(a []any) (any, error)
	strict := true
	switch s.Name {
	case "jsonb_extract_path", "json_extract_path", "jsonb_extract_path_text", "json_extract_path_text":
		src := types[0] == catalog.JSON
		text := strings.HasSuffix(s.Name, "_text")
		strict = false
		fn = func(a []any) (any, error) {
			if a[0] == nil {
				return nil, nil
			}
			v, err := parseJSON(a[0], src)
			if err != nil {
				return nil, err
			}
			return jsonPath(v, a[1:], src, text), nil
		}
	case "jsonb_typeof", "json_typeof":
		fn = func(a []any) (any, error) {
			v, err := parseJSON(a[0], types[0] == catalog.JSON)
			if err != nil {
				return nil, err
			}
			return v.Kind.String(), nil
		}
	case "jsonb_array_length", "json_array_length":
		fn = func(a []any) (any, error) {
			v, err := parseJSON(a[0], types[0] == catalog.JSON)
			if err != nil {
				return nil, err
			}
			switch v.Kind {
			case jsonb.Array:
				return int64(len(v.Elems)), nil
			case jsonb.Object:
				return nil, pgerr.New(pgerr.InvalidParameterValue, "cannot get array length of a non-array")
			}
			return nil, pgerr.New(pgerr.InvalidParameterValue, "cannot get array length of a scalar")
		}
	case "jsonb_pretty":
		fn = func(a []any) (any, error) {
			v, err := parseJSON(a[0], false)
			if err != nil {
				return nil, err
			}
			return v.Pretty(), nil
		}
	case "to_jsonb", "to_json":
		src := s.Name == "to_json"
		fn = func(a []any) (any, error) {
			v, err := ToJSON(a[0], types[0], src)
			if err != nil {
				return nil, err
			}
			return jsonText(v, src), nil
		}
	case "jsonb_build_object", "json_build_object":
		src := s.Name == "json_build_object"
		strict = false
		if len(args)%2 != 0 {
			return func(catalog.Row, *Env) (any, error) {
				return nil, pgerr.New(pgerr.InvalidParameterValue, "argument list must have even number of elements").
					WithHint("The arguments of %s() must consist of alternating keys and values.", s.Name)
			}
		}
		fn = func(a []any) (any, error) {
			var keys []string
			var vals []jsonb.Value
			for i := 0; i < len(a); i += 2 {
				if a[i] == nil {
					return nil, pgerr.New(pgerr.InvalidParameterValue, "argument %d: key must not be null", i+1)
				}
				k, err := ToJSON(a[i], types[i], false)
				if err != nil {
					return nil, err
				}
				if k.Kind != jsonb.String {
					if k.Kind >= jsonb.Array {
						return nil, pgerr.New(pgerr.InvalidParameterValue, "key value must be scalar, not array, composite, or json")
					}
					k = jsonb.Value{Kind: jsonb.String, Str: k.Text()}
				}
				v, err := ToJSON(a[i+1], types[i+1], src)
				if err != nil {
					return nil, err
				}
				keys = append(keys, k.Str)
				vals = append(vals, v)
			}
			obj := jsonb.NewObject(keys, vals, !src)
			if src {
				return catalog.JSONText(buildObjectText(obj)), nil
			}
			return catalog.JSONText(obj.Text()), nil
		}
	case "jsonb_build_array", "json_build_array":
		src := s.Name == "json_build_array"
		strict = false
		fn = func(a []any) (any, error) {
			arr := jsonb.Value{Kind: jsonb.Array, Elems: []jsonb.Value{}}
			for i, x := range a {
				v, err := ToJSON(x, types[i], src)
				if err != nil {
					return nil, err
				}
				arr.Elems = append(arr.Elems, v)
			}
			return jsonText(arr, src), nil
		}
	case "jsonb_set", "jsonb_insert":
		mode := jsonb.SetCreate
		if s.Name == "jsonb_insert" {
			mode = jsonb.InsertBefore
		}
		fn = func(a []any) (any, error) {
			m := mode
			if len(a) > 3 && !a[3].(bool) && m == jsonb.SetCreate {
				m = jsonb.SetReplace
			} else if len(a) > 3 && a[3].(bool) && m == jsonb.InsertBefore {
				m = jsonb.InsertAfter
			}
			return setPath(a[0], a[1], a[2], m)
		}
	case "jsonb_set_lax":
		strict = false
		fn = func(a []any) (any, error) {
			if a[0] == nil || a[1] == nil || (len(a) > 3 && a[3] == nil) {
				return nil, nil
			}
			m := jsonb.SetCreate
			if len(a) > 3 && !a[3].(bool) {
				m = jsonb.SetReplace
			}
			badTreatment := func() error {
				return pgerr.New(pgerr.InvalidParameterValue, `null_value_treatment must be "delete_key", "return_target", "use_json_null", or "raise_exception"`)
			}
			if len(a) > 4 && a[4] == nil {
				return nil, badTreatment() // even when not needed, as in Postgres
			}
			if a[2] != nil {
				return setPath(a[0], a[1], a[2], m)
			}
			treatment := "use_json_null"
			if len(a) > 4 {
				treatment = a[4].(string)
			}
			switch treatment {
			case "raise_exception":
				return nil, pgerr.New(pgerr.NullValueNotAllowedDataException, "JSON value must not be null").
					WithDetail(`Exception was raised because null_value_treatment is "raise_exception".`).
					WithHint("To avoid, either change the null_value_treatment argument or ensure that an SQL NULL is not passed.")
			case "use_json_null":
				return setPath(a[0], a[1], catalog.JSONText("null"), m)
			case "delete_key":
				v, err := parseJSON(a[0], false)
				if err != nil {
					return nil, err
				}
				if v, err = v.DeletePath(pathSteps(a[1])); err != nil {
					return nil, err
				}
				return catalog.JSONText(v.Text()), nil
			case "return_target":
				return a[0], nil
			}
			return nil, badTreatment()
		}
	case "jsonb_strip_nulls", "json_strip_nulls":
		src := s.Name == "json_strip_nulls"
		fn = func(a []any) (any, error) {
			v, err := parseJSON(a[0], src)
			if err != nil {
				return nil, err
			}
			v = v.StripNulls()
			if src {
				return catalog.JSONText(v.Compact()), nil
			}
			return catalog.JSONText(v.Text()), nil
		}
	case "gen_random_uuid":
		fn = func([]any) (any, error) {
			var u catalog.UUIDVal
			if _, err := rand.Read(u[:]); err != nil {
				return nil, pgerr.Wrap(err, pgerr.InternalError)
			}
			u[6] = u[6]&0x0f | 0x40 // version 4
			u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
			return u, nil
		}
	case "md5":
		fn = func(a []any) (any, error) {
			sum := md5.Sum(asBytes(a[0]))
			return hex.EncodeToString(sum[:]), nil
		}
	case "octet_length":
		fn = func(a []any) (any, error) { return int64(len(asBytes(a[0]))), nil }
	case "encode":
		fn = func(a []any) (any, error) { return encodeBytea(a[0].([]byte), a[1].(string)) }
	case "decode":
		fn = func(a []any) (any, error) { return decodeBytea(a[0].(string), a[1].(string)) }
	case "convert_from":
		fn = func(a []any) (any, error) { return convertFrom(a[0].([]byte), a[1].(string)) }
	case "convert_to":
		fn = func(a []any) (any, error) { return convertTo(a[0].(string), a[1].(string)) }
	case "from_bytes":
		fn = func(a []any) (any, error) { return fromBytes(a[0].([]byte), a[1].(string)) }
	case "to_bytes":
		fn = func(a []any) (any, error) { return toBytes(a[0].(string), a[1].(string)) }
	default:
		return nil
	}
	return func(row catalog.Row, env *Env) (any, error) {
		vals := make([]any, len(args))
		for i, a := range args {
			v, err := a(row, env)
			if err != nil {
				return nil, err
			}
			if v == nil && strict {
				return nil, nil
			}
			vals[i] = v
		}
		return fn(vals)
	}
}

// setPath is jsonb_set and jsonb_insert of target, a text[] path and
// a jsonb x.
func setPath(target, path, x any, mode jsonb.SetMode) (any, error) {
	v, err := parseJSON(target, false)
	if err != nil {
		return nil, err
	}
	nv, err := parseJSON(x, false)
	if err != nil {
		return nil, err
	}
	steps, nulls := pathSteps(path)
	out, err := v.SetPath(steps, nulls, nv, mode)
	if err != nil {
		return nil, err
	}
	return catalog.JSONText(out.Text()), nil
}

// pathSteps splits a text[] path into its steps and which are NULL.
func pathSteps(path any) ([]string, []bool) {
	elems := path.([]any)
	steps, nulls := make([]string, len(elems)), make([]bool, len(elems))
	for i, e := range elems {
		if e == nil {
			nulls[i] = true
			continue
		}
		steps[i] = e.(string)
	}
	return steps, nulls
}

func asBytes(v any) []byte {
	if b, ok := v.([]byte); ok {
		return b
	}
	return []byte(v.(string))
}

// jsonText is the json (src) or jsonb text of v; a json array built
// here is written with ", " as Postgres's json_build_array does.
func jsonText(v jsonb.Value, src bool) catalog.JSONText {
	if src && v.Raw == "" && v.Kind == jsonb.Array {
		var b strings.Builder
		b.WriteByte('[')
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(e.JSONText())
		}
		b.WriteByte(']')
		return catalog.JSONText(b.String())
	}
	if src {
		return catalog.JSONText(v.JSONText())
	}
	return catalog.JSONText(v.Text())
}

// buildObjectText is json_build_object's text: "key" : value, members
// apart by ", ".
func buildObjectText(v jsonb.Value) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range v.Keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(jsonb.Quote(k))
		b.WriteString(" : ")
		b.WriteString(v.Vals[i].JSONText())
	}
	b.WriteByte('}')
	return b.String()
}

// ToJSON converts a SQL value of type t to JSON as to_jsonb (src false)
// or to_json does: numbers and booleans as themselves, NULL as null,
// arrays as arrays, json as itself, timestamps in ISO 8601 with a T,
// anything else as the string of its text output.
func ToJSON(v any, t catalog.Type, src bool) (jsonb.Value, error) {
	switch x := v.(type) {
	case catalog.Struct, catalog.Map:
		// As the wire writes them: a STRUCT's fields, a MAP's entries.
		if src {
			return pgcodec.NestedJSON(t, x)
		}
		return pgcodec.NestedJSONB(t, x)
	case nil:
		return jsonb.Value{Kind: jsonb.Null}, nil
	case bool:
		return jsonb.Value{Kind: jsonb.Bool, Bool: x}, nil
	case int64:
		return number(planner.FormatValue(x), src), nil
	case float64:
		s := planner.FormatValue(x)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return jsonb.Value{Kind: jsonb.String, Str: s}, nil // NaN and infinities
		}
		return number(s, src), nil
	case catalog.JSONText:
		if src {
			return jsonb.ParseJSON(string(x))
		}
		// A json value's text, or a jsonb's, read as jsonb: canonical.
		return jsonb.Parse(string(x))
	case time.Time:
		s := x.UTC().Format("2006-01-02T15:04:05.999999")
		if t == catalog.TimestampTZ {
			s += "+00:00"
		}
		return jsonb.Value{Kind: jsonb.String, Str: s}, nil
	case []any:
		arr := jsonb.Value{Kind: jsonb.Array, Elems: []jsonb.Value{}}
		for _, e := range x {
			ev, err := ToJSON(e, t.Elem(), src)
			if err != nil {
				return jsonb.Value{}, err
			}
			arr.Elems = append(arr.Elems, ev)
		}
		if src {
			// to_json writes arrays without spaces.
			var b strings.Builder
			b.WriteByte('[')
			for i, e := range arr.Elems {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(e.JSONText())
			}
			b.WriteByte(']')
			arr.Raw = b.String()
		}
		return arr, nil
	}
	if t.Numeric() || t == catalog.Decimal {
		return number(planner.FormatValue(v), src), nil
	}
	return jsonb.Value{Kind: jsonb.String, Str: planner.FormatValue(v)}, nil
}

// number is a JSON number of numeric text s.
func number(s string, src bool) jsonb.Value {
	if src {
		return jsonb.Value{Kind: jsonb.Number, Str: s, Raw: s}
	}
	return jsonb.Value{Kind: jsonb.Number, Str: jsonb.CanonicalNumber(s)}
}

// encodeBytea is encode(bytea, format).
func encodeBytea(b []byte, format string) (any, error) {
	switch strings.ToLower(format) {
	case "hex":
		return hex.EncodeToString(b), nil
	case "base64":
		// Postgres breaks base64 lines at 76 characters.
		s := base64.StdEncoding.EncodeToString(b)
		var out strings.Builder
		for len(s) > 76 {
			out.WriteString(s[:76])
			out.WriteByte('\n')
			s = s[76:]
		}
		out.WriteString(s)
		return out.String(), nil
	case "escape":
		return pgcodec.EscapeBytea(b), nil
	}
	return nil, pgerr.New(pgerr.InvalidParameterValue, "unrecognized encoding: %q", format)
}

// decodeBytea is decode(text, format).
func decodeBytea(s, format string) (any, error) {
	switch strings.ToLower(format) {
	case "hex":
		return pgcodec.ParseBytea(`\x` + s)
	case "base64":
		clean := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, s)
		b, err := base64.StdEncoding.DecodeString(clean)
		if err != nil {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "invalid base64 end sequence").
				WithHint("Input data is missing padding, is truncated, or is otherwise corrupted.")
		}
		return b, nil
	case "escape":
		return pgcodec.ParseBytea(s)
	}
	return nil, pgerr.New(pgerr.InvalidParameterValue, "unrecognized encoding: %q", format)
}
