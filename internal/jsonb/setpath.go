package jsonb

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/basindb/basin/internal/pgerr"
)

// SetMode is what SetPath does with the value at the end of its path.
type SetMode uint8

const (
	// SetReplace replaces the value at the path, and adds nothing where
	// there is none (jsonb_set with create_if_missing false).
	SetReplace SetMode = iota
	// SetCreate replaces the value at the path, or adds it where the
	// path's last step is missing (jsonb_set).
	SetCreate
	// InsertBefore inserts before the array element at the path, or adds
	// a missing object member; an existing member is an error
	// (jsonb_insert).
	InsertBefore
	// InsertAfter is InsertBefore, after the element
	// (jsonb_insert(..., true)).
	InsertAfter
	// deletePath removes the value at the path (DeletePath).
	deletePath
)

// SetPath is jsonb_set and jsonb_insert: v with x put at path as mode
// says. A step in an array is an element index, negative from the end;
// an index past either end adds at that end, when mode adds. Only the
// last step is ever added: a path that leads nowhere before it leaves v
// as it is, and so does any path when v is empty and mode adds nothing.
// nulls, when not nil, marks the steps that are SQL NULL, an error when
// the walk reaches one.
func (v Value) SetPath(path []string, nulls []bool, x Value, mode SetMode) (Value, error) {
	if v.Kind < Array {
		return Value{}, pgerr.New(pgerr.InvalidParameterValue, "cannot set path in scalar")
	}
	s := setter{path: path, nulls: nulls, x: x, mode: mode}
	if len(path) == 0 || (len(v.Elems) == 0 && len(v.Keys) == 0 && !s.adds()) {
		return v, nil // as Postgres, whatever the path holds
	}
	return s.set(v, 0)
}

type setter struct {
	path  []string
	nulls []bool
	x     Value
	mode  SetMode
}

func (s *setter) set(v Value, level int) (Value, error) {
	if level < len(s.nulls) && s.nulls[level] {
		return Value{}, pgerr.New(pgerr.NullValueNotAllowedDataException, "path element at position %d is null", level+1)
	}
	switch v.Kind {
	case Object:
		return s.setInObject(v, level)
	case Array:
		return s.setInArray(v, level)
	}
	return v, nil // a scalar before the path's end: nothing to set
}

func (s *setter) adds() bool { return s.mode != SetReplace && s.mode != deletePath }

func (s *setter) setInObject(v Value, level int) (Value, error) {
	last := level == len(s.path)-1
	key := s.path[level]
	for i, k := range v.Keys {
		if k != key {
			continue
		}
		out := Value{Kind: Object, Keys: v.Keys, Vals: append([]Value(nil), v.Vals...)}
		if !last {
			inner, err := s.set(v.Vals[i], level+1)
			if err != nil {
				return Value{}, err
			}
			out.Vals[i] = inner
			return out, nil
		}
		switch s.mode {
		case InsertBefore, InsertAfter:
			return Value{}, pgerr.New(pgerr.InvalidParameterValue, "cannot replace existing key").
				WithHint("Try using the function jsonb_set to replace key value.")
		case deletePath:
			out.Keys = slices.Delete(slices.Clone(v.Keys), i, i+1)
			out.Vals = slices.Delete(out.Vals, i, i+1)
		default:
			out.Vals[i] = s.x
		}
		return out, nil
	}
	if !last || !s.adds() {
		return v, nil
	}
	out := Value{Kind: Object, Keys: append(append([]string(nil), v.Keys...), key), Vals: append(append([]Value(nil), v.Vals...), s.x)}
	out.canonicalize()
	return out, nil
}

func (s *setter) setInArray(v Value, level int) (Value, error) {
	last := level == len(s.path)-1
	n := len(v.Elems)
	idx, ok := stepIndex(s.path[level])
	if !ok {
		return Value{}, pgerr.New(pgerr.InvalidTextRepresentation, "path element at position %d is not an integer: \"%s\"", level+1, s.path[level])
	}
	if idx < 0 {
		if -idx > n {
			idx = math.MinInt // before the first element
		} else {
			idx += n
		}
	}
	idx = min(idx, n)
	if !last {
		if idx < 0 || idx >= n {
			return v, nil
		}
		inner, err := s.set(v.Elems[idx], level+1)
		if err != nil {
			return Value{}, err
		}
		out := Value{Kind: Array, Elems: append([]Value(nil), v.Elems...)}
		out.Elems[idx] = inner
		return out, nil
	}
	out := Value{Kind: Array, Elems: make([]Value, 0, n+1)}
	switch {
	case idx >= 0 && idx < n:
		out.Elems = append(out.Elems, v.Elems[:idx]...)
		switch s.mode {
		case SetReplace, SetCreate:
			out.Elems = append(out.Elems, s.x)
		case InsertBefore:
			out.Elems = append(out.Elems, s.x, v.Elems[idx])
		case InsertAfter:
			out.Elems = append(out.Elems, v.Elems[idx], s.x)
		case deletePath:
		}
		out.Elems = append(out.Elems, v.Elems[idx+1:]...)
	case !s.adds():
		return v, nil
	case idx < 0 || n == 0:
		out.Elems = append(append(out.Elems, s.x), v.Elems...)
	default: // past the end
		out.Elems = append(append(out.Elems, v.Elems...), s.x)
	}
	return out, nil
}

// stepIndex reads a path step as an array index as Postgres does (C's
// strtol into an int: leading white space and a sign allowed, nothing
// after the digits).
func stepIndex(step string) (int, bool) {
	t := strings.TrimLeft(step, " \t\n\v\f\r")
	n, err := strconv.ParseInt(t, 10, 32)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// StripNulls is jsonb_strip_nulls and json_strip_nulls: v without the
// object members, at any depth, whose value is a JSON null (array
// elements that are null stay).
func (v Value) StripNulls() Value {
	switch v.Kind {
	case Array:
		out := Value{Kind: Array, Elems: make([]Value, len(v.Elems))}
		for i, e := range v.Elems {
			out.Elems[i] = e.StripNulls()
		}
		return out
	case Object:
		out := Value{Kind: Object}
		for i, k := range v.Keys {
			if v.Vals[i].Kind == Null {
				continue
			}
			out.Keys = append(out.Keys, k)
			out.Vals = append(out.Vals, v.Vals[i].StripNulls())
		}
		return out
	}
	v.Raw = ""
	return v
}
