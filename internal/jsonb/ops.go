package jsonb

import (
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/internal/pgerr"
)

// Field returns the member key of an object (the last of duplicates,
// as json's -> does), false for a missing key or a non-object.
func (v Value) Field(key string) (Value, bool) {
	if v.Kind != Object {
		return Value{}, false
	}
	for i := len(v.Keys) - 1; i >= 0; i-- {
		if v.Keys[i] == key {
			return v.Vals[i], true
		}
	}
	return Value{}, false
}

// Index returns element i of an array, counting from the end when i is
// negative; false out of range or for a non-array.
func (v Value) Index(i int64) (Value, bool) {
	if v.Kind != Array {
		return Value{}, false
	}
	n := int64(len(v.Elems))
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return Value{}, false
	}
	return v.Elems[i], true
}

// Path follows path (#> and jsonb_extract_path): object keys, and array
// indexes written as integers. A step that does not apply ends in
// false.
func (v Value) Path(path []string) (Value, bool) {
	for _, p := range path {
		var ok bool
		switch v.Kind {
		case Object:
			v, ok = v.Field(p)
		case Array:
			n, err := parseIndex(p)
			if err != nil {
				return Value{}, false
			}
			v, ok = v.Index(n)
		}
		if !ok {
			return Value{}, false
		}
	}
	return v, true
}

func parseIndex(s string) (int64, error) {
	var n int64
	neg := false
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "-") {
		neg, t = true, t[1:]
	} else if strings.HasPrefix(t, "+") {
		t = t[1:]
	}
	if t == "" {
		return 0, errNotIndex
	}
	for _, c := range t {
		if c < '0' || c > '9' || n > 1<<40 {
			return 0, errNotIndex
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

type indexError struct{}

func (indexError) Error() string { return "not an array index" }

var errNotIndex error = indexError{}

// AsText is ->>'s text of v: a string's contents, SQL NULL (false) for
// a JSON null, the JSON text of anything else (jsonSrc: its source).
func (v Value) AsText(jsonSrc bool) (string, bool) {
	switch v.Kind {
	case Null:
		return "", false
	case String:
		return v.Str, true
	}
	if jsonSrc {
		return v.JSONText(), true
	}
	return v.Text(), true
}

// Compare orders jsonb values as Postgres's btree does: by kind (null <
// string < number < boolean < array < object), a top-level scalar
// counting as a one-element array; arrays by length, then element by element; objects by
// member count, then key and value in storage order.
func Compare(a, b Value) int {
	as, bs := a.Kind < Array, b.Kind < Array
	if as == bs {
		return compare(a, b)
	}
	// A top-level scalar is a one-element "raw scalar" array to
	// Postgres: below every object; against an array, the element
	// counts decide first ([] < 1 < [0] < [1, 2]), then the scalar is
	// the lower.
	if as {
		return -Compare(b, a)
	}
	// a is the container, b the scalar.
	if a.Kind == Array && len(a.Elems) != 1 {
		return cmpInt(len(a.Elems), 1)
	}
	return 1
}

func compare(a, b Value) int {
	if a.Kind != b.Kind {
		if a.Kind < b.Kind {
			return -1
		}
		return 1
	}
	switch a.Kind {
	case String:
		return strings.Compare(a.Str, b.Str)
	case Number:
		return compareNumbers(a.Str, b.Str)
	case Bool:
		switch {
		case a.Bool == b.Bool:
			return 0
		case b.Bool:
			return -1
		}
		return 1
	case Array:
		if len(a.Elems) != len(b.Elems) {
			return cmpInt(len(a.Elems), len(b.Elems))
		}
		for i := range a.Elems {
			if c := compare(a.Elems[i], b.Elems[i]); c != 0 {
				return c
			}
		}
	case Object:
		if len(a.Keys) != len(b.Keys) {
			return cmpInt(len(a.Keys), len(b.Keys))
		}
		for i := range a.Keys {
			if c := strings.Compare(a.Keys[i], b.Keys[i]); c != 0 {
				return c
			}
			if c := compare(a.Vals[i], b.Vals[i]); c != 0 {
				return c
			}
		}
	}
	return 0
}

func cmpInt(a, b int) int {
	if a < b {
		return -1
	}
	return 1
}

func compareNumbers(a, b string) int {
	x, _, err1 := apd.NewFromString(a)
	y, _, err2 := apd.NewFromString(b)
	if err1 != nil || err2 != nil {
		return strings.Compare(a, b)
	}
	return x.Cmp(y)
}

// Equal reports whether a and b are the same jsonb value.
func Equal(a, b Value) bool { return Compare(a, b) == 0 }

// Contains is a @> b: Postgres's jsonb containment. An object contains
// an object whose every member it has with a containing value; an
// array contains an array whose every element some element of its
// contains; scalars contain equal scalars; and, at the top level only,
// an array contains a scalar that is one of its elements.
func Contains(a, b Value) bool {
	if a.Kind == Array && b.Kind < Array {
		for _, e := range a.Elems {
			if e.Kind < Array && compare(e, b) == 0 {
				return true
			}
		}
		return false
	}
	return contains(a, b)
}

func contains(a, b Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case Object:
		for i, k := range b.Keys {
			av, ok := a.Field(k)
			if !ok || !contains(av, b.Vals[i]) {
				return false
			}
		}
		return true
	case Array:
	next:
		for _, be := range b.Elems {
			for _, ae := range a.Elems {
				if contains(ae, be) {
					continue next
				}
			}
			return false
		}
		return true
	}
	return compare(a, b) == 0
}

// Exists is v ? key: key is a member of an object, a string element of
// an array, or equal to a top-level string.
func (v Value) Exists(key string) bool {
	switch v.Kind {
	case Object:
		_, ok := v.Field(key)
		return ok
	case Array:
		for _, e := range v.Elems {
			if e.Kind == String && e.Str == key {
				return true
			}
		}
	case String:
		return v.Str == key
	}
	return false
}

// Concat is a || b on jsonb: two objects merge (b's members win), two
// arrays join, and otherwise each side that is not an array is a
// one-element array.
func Concat(a, b Value) Value {
	if a.Kind == Object && b.Kind == Object {
		out := Value{Kind: Object}
		out.Keys = append(append(out.Keys, a.Keys...), b.Keys...)
		out.Vals = append(append(out.Vals, a.Vals...), b.Vals...)
		out.canonicalize()
		return out
	}
	elems := func(v Value) []Value {
		if v.Kind == Array {
			return v.Elems
		}
		return []Value{v}
	}
	out := Value{Kind: Array}
	out.Elems = append(append(out.Elems, elems(a)...), elems(b)...)
	return out
}

// Canon returns v as jsonb holds it: numbers canonical, object members
// sorted and unique, no source text. (A value from ParseJSON becomes
// the jsonb of the same text.)
func (v Value) Canon() Value {
	v.Raw = ""
	switch v.Kind {
	case Number:
		v.Str = CanonicalNumber(v.Str)
	case Array:
		elems := make([]Value, len(v.Elems))
		for i, e := range v.Elems {
			elems[i] = e.Canon()
		}
		v.Elems = elems
	case Object:
		vals := make([]Value, len(v.Vals))
		for i, e := range v.Vals {
			vals[i] = e.Canon()
		}
		v.Keys = append([]string(nil), v.Keys...)
		v.Vals = vals
		v.canonicalize()
	}
	return v
}

// NewObject returns an object of keys and vals in the order given
// (json_build_object); canon sorts and deduplicates them for jsonb.
func NewObject(keys []string, vals []Value, canon bool) Value {
	v := Value{Kind: Object, Keys: keys, Vals: vals}
	if canon {
		v.canonicalize()
	}
	return v
}

// EqualityKey returns a text equal for jsonb values Equal calls equal
// and different otherwise (numbers without their scale: 1.0 and 1 are
// equal jsonb), for grouping and DISTINCT.
func EqualityKey(text string) string {
	v, err := Parse(text)
	if err != nil {
		return text
	}
	return v.reduced().Text()
}

func (v Value) reduced() Value {
	switch v.Kind {
	case Number:
		if d, _, err := apd.NewFromString(v.Str); err == nil {
			var r apd.Decimal
			r.Reduce(d)
			v.Str = r.Text('e')
		}
	case Array:
		elems := make([]Value, len(v.Elems))
		for i, e := range v.Elems {
			elems[i] = e.reduced()
		}
		v.Elems = elems
	case Object:
		vals := make([]Value, len(v.Vals))
		for i, e := range v.Vals {
			vals[i] = e.reduced()
		}
		v.Vals = vals
	}
	return v
}

// errScalarDelete is jsonb - on a scalar.
var errScalarDelete = pgerr.New(pgerr.InvalidParameterValue, "cannot delete from scalar")

// DeleteKeys is jsonb - text and jsonb - text[]: the object without
// those members, or the array without the string elements equal to one
// of keys.
func (v Value) DeleteKeys(keys ...string) (Value, error) {
	drop := func(s string) bool {
		for _, k := range keys {
			if k == s {
				return true
			}
		}
		return false
	}
	switch v.Kind {
	case Object:
		out := Value{Kind: Object}
		for i, k := range v.Keys {
			if !drop(k) {
				out.Keys = append(out.Keys, k)
				out.Vals = append(out.Vals, v.Vals[i])
			}
		}
		return out, nil
	case Array:
		out := Value{Kind: Array}
		for _, e := range v.Elems {
			if e.Kind != String || !drop(e.Str) {
				out.Elems = append(out.Elems, e)
			}
		}
		return out, nil
	}
	return Value{}, errScalarDelete
}

// DeleteIndex is jsonb - integer: the array without element i (from
// the end when negative); out of range leaves it as it is.
func (v Value) DeleteIndex(i int64) (Value, error) {
	switch v.Kind {
	case Object:
		return Value{}, pgerr.New(pgerr.InvalidParameterValue, "cannot delete from object using integer index")
	case Array:
		n := int64(len(v.Elems))
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			return v, nil
		}
		out := Value{Kind: Array, Elems: append(append([]Value{}, v.Elems[:i]...), v.Elems[i+1:]...)}
		return out, nil
	}
	return Value{}, errScalarDelete
}

// DeletePath is jsonb #- text[]: v without the value at path; a path
// that leads nowhere leaves v as it is. nulls marks the steps that are
// SQL NULL, as for SetPath.
func (v Value) DeletePath(path []string, nulls []bool) (Value, error) {
	if v.Kind < Array {
		return Value{}, pgerr.New(pgerr.InvalidParameterValue, "cannot delete path in scalar")
	}
	return v.SetPath(path, nulls, Value{}, deletePath)
}
