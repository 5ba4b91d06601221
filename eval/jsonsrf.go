package eval

import (
	"strings"

	"github.com/basindb/basin/catalog"

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
