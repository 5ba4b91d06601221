package catalog

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Nested types: STRUCT<name T, ...> and MAP<VARCHAR, T>, ksqlDB's
// compound types, and arrays of them.
//
// A Type was a byte; a composite type needs more than a byte says, so
// composites are interned in a process-wide table and a composite Type
// is its index in that table shifted left by 8, or'ed with its kind
// (kindStruct or kindMap) in the low byte. Every Type below 0x100 keeps
// the number it always had, arrays included (arrayFlag is still 0x80,
// and ARRAY<STRUCT<...>> is the struct's Type | arrayFlag), so the
// command logs written before composites existed load unchanged.
//
// The index of a composite differs from process to process (it is the
// order in which the node met the types), so a composite Type must never
// leave the process as a number: the command log records it as its text
// (MarshalJSON), which a node interns again when it replays the log
// (UnmarshalJSON). Row encodings, the wire and the value formats never
// record types at all, only values.
//
// Values travel as:
//
//	STRUCT  Struct: one value per field, in field order
//	MAP     Map: entries sorted by key, keys unique
//
// Map keys are VARCHAR, as in ksqlDB (and as JSON objects and Avro maps
// allow), which keeps Map a sorted list with no key type of its own.
const (
	kindStruct Type = 0x40
	kindMap    Type = 0x41
	kindMask   Type = 0xff &^ arrayFlag
)

// MaxNestingDepth bounds how deep types nest (STRUCT<a STRUCT<b ...>>),
// so that the encodings that recurse over a value's type stay bounded.
const MaxNestingDepth = 16

// Field is one field of a STRUCT type.
type Field struct {
	Name string
	Type Type
}

// Struct is a STRUCT value: one value per field of its type, in field
// order (nil is a NULL field).
type Struct []any

// MapEntry is one entry of a Map.
type MapEntry struct {
	Key   string
	Value any
}

// Map is a MAP value: its entries sorted by key, each key once. Use
// NewMap to make one from entries in any order.
type Map []MapEntry

// NewMap returns the Map of entries: sorted by key, the last entry of a
// repeated key winning (as the last of a JSON object's repeated keys
// does).
func NewMap(entries []MapEntry) Map {
	m := make(Map, len(entries))
	copy(m, entries)
	sort.SliceStable(m, func(i, j int) bool { return m[i].Key < m[j].Key })
	out := m[:0]
	for i, e := range m {
		if i+1 < len(m) && m[i+1].Key == e.Key {
			continue
		}
		out = append(out, e)
	}
	return out
}

// Get returns the value of key k and whether m has it.
func (m Map) Get(k string) (any, bool) {
	i := sort.Search(len(m), func(i int) bool { return m[i].Key >= k })
	if i < len(m) && m[i].Key == k {
		return m[i].Value, true
	}
	return nil, false
}

// composite is an interned STRUCT or MAP type.
type composite struct {
	kind       Type
	fields     []Field // kindStruct
	key, value Type    // kindMap
	depth      int     // 1 for a composite of scalars and arrays of them
	text       string  // the canonical spelling, String()
}

// interned is the process-wide table of composite types. A reader loads
// the list without a lock (it only grows, and a published slice's
// elements never change); mu serializes interning.
var interned struct {
	mu     sync.Mutex
	byText map[string]Type
	list   atomic.Pointer[[]*composite]
}

func init() {
	interned.byText = make(map[string]Type)
	list := []*composite{nil} // index 0 is no composite
	interned.list.Store(&list)
}

// ErrNestingTooDeep is returned for a type nested deeper than
// MaxNestingDepth.
var ErrNestingTooDeep = fmt.Errorf("catalog: types nested deeper than %d", MaxNestingDepth)

func intern(c *composite) Type {
	interned.mu.Lock()
	defer interned.mu.Unlock()
	if t, ok := interned.byText[c.text]; ok {
		return t
	}
	old := *interned.list.Load()
	list := make([]*composite, len(old), len(old)+1)
	copy(list, old)
	list = append(list, c)
	t := Type(len(old))<<8 | c.kind
	interned.byText[c.text] = t
	interned.list.Store(&list)
	return t
}

func (t Type) composite() *composite {
	if t < 0x100 || t.IsArray() {
		return nil
	}
	list := *interned.list.Load()
	i := int(t >> 8)
	if i >= len(list) {
		return nil
	}
	return list[i]
}

// depth is how deep t nests: 0 for a scalar or an array of scalars.
func (t Type) depth() int {
	if c := t.Elem().composite(); t.IsArray() && c != nil {
		return c.depth
	}
	if c := t.composite(); c != nil {
		return c.depth
	}
	return 0
}

// StructOf returns the STRUCT type of fields, which must have distinct
// names (the parser checks, with the user's positions).
func StructOf(fields []Field) (Type, error) {
	c := &composite{kind: kindStruct, fields: append([]Field(nil), fields...)}
	for _, f := range fields {
		c.depth = max(c.depth, f.Type.depth()+1)
	}
	if len(fields) == 0 {
		c.depth = 1
	}
	if c.depth > MaxNestingDepth {
		return Unknown, ErrNestingTooDeep
	}
	var b strings.Builder
	b.WriteString("STRUCT<")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteField(f.Name))
		b.WriteByte(' ')
		b.WriteString(f.Type.String())
	}
	b.WriteByte('>')
	c.text = b.String()
	return intern(c), nil
}

// MapOf returns the MAP type with keys of type key (VARCHAR: the only
// key type basin has, as in ksqlDB) and values of type value.
func MapOf(key, value Type) (Type, error) {
	if key != Varchar {
		return Unknown, fmt.Errorf("catalog: map keys must be VARCHAR, not %s", key)
	}
	c := &composite{kind: kindMap, key: key, value: value, depth: value.depth() + 1}
	if c.depth > MaxNestingDepth {
		return Unknown, ErrNestingTooDeep
	}
	c.text = "MAP<" + key.String() + ", " + value.String() + ">"
	return intern(c), nil
}

// IsStruct reports whether t is a STRUCT type.
func (t Type) IsStruct() bool {
	return t&kindMask == kindStruct && !t.IsArray() && t.composite() != nil
}

// IsMap reports whether t is a MAP type.
func (t Type) IsMap() bool { return t&kindMask == kindMap && !t.IsArray() && t.composite() != nil }

// IsNested reports whether t is a STRUCT or a MAP type.
func (t Type) IsNested() bool { return t.IsStruct() || t.IsMap() }

// HasNested reports whether t is or holds a STRUCT or MAP: a composite,
// or an array of composites.
func (t Type) HasNested() bool { return t.IsNested() || t.IsArray() && t.Elem().IsNested() }

// Fields returns the fields of a STRUCT type (nil for any other type).
// The slice is shared: do not modify it.
func (t Type) Fields() []Field {
	if c := t.composite(); c != nil && c.kind == kindStruct {
		return c.fields
	}
	return nil
}

// FieldIndex returns the index of the field of STRUCT type t named name,
// or -1. Names match exactly first, then case-insensitively when only
// one field matches that way (as a JSON object's keys are read).
func (t Type) FieldIndex(name string) int {
	fs := t.Fields()
	for i, f := range fs {
		if f.Name == name {
			return i
		}
	}
	found := -1
	for i, f := range fs {
		if strings.EqualFold(f.Name, name) {
			if found >= 0 {
				return -1
			}
			found = i
		}
	}
	return found
}

// Key returns the key type of a MAP type (Unknown for any other type).
func (t Type) Key() Type {
	if c := t.composite(); c != nil && c.kind == kindMap {
		return c.key
	}
	return Unknown
}

// Value returns the value type of a MAP type (Unknown for any other
// type).
func (t Type) Value() Type {
	if c := t.composite(); c != nil && c.kind == kindMap {
		return c.value
	}
	return Unknown
}

// nestedString is String for composites and arrays of them.
func (t Type) nestedString() (string, bool) {
	if t.IsArray() {
		if c := t.Elem().composite(); c != nil {
			return "ARRAY<" + c.text + ">", true
		}
		return "", false
	}
	if c := t.composite(); c != nil {
		return c.text, true
	}
	return "", false
}

// quoteField spells a field name as an identifier: bare when it reads
// back as itself (lower case letters, digits and underscores, not
// starting with a digit), else double-quoted.
func quoteField(name string) string {
	bare := name != ""
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			bare = false
			break
		}
	}
	if bare {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// MarshalJSON records t in the command log: the number every type
// below 0x100 always had, a composite's text (which UnmarshalJSON
// interns again: see the comment at kindStruct).
func (t Type) MarshalJSON() ([]byte, error) {
	if s, ok := t.nestedString(); ok {
		return json.Marshal(s)
	}
	return strconv.AppendUint(nil, uint64(t), 10), nil
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (t *Type) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		typ, err := ParseTypeText(s)
		if err != nil {
			return err
		}
		*t = typ
		return nil
	}
	n, err := strconv.ParseUint(string(b), 10, 32)
	if err != nil || n >= 0x100 {
		return fmt.Errorf("catalog: bad type %s in the command log", b)
	}
	*t = Type(n)
	return nil
}

// ParseTypeText reads a type as String writes it: a name ParseType
// knows, T[] arrays, ARRAY<T>, MAP<K, V> and STRUCT<name T, ...> with
// field names bare (taken as written) or double-quoted. It is the
// command log's reader, not the SQL parser's: sql/ reads the user's
// spelling with positions and rules of its own.
func ParseTypeText(s string) (Type, error) {
	p := typeTextParser{s: s}
	t, err := p.parse(0)
	if err != nil {
		return Unknown, err
	}
	p.space()
	if p.i != len(p.s) {
		return Unknown, p.errorf("trailing text")
	}
	return t, nil
}

type typeTextParser struct {
	s string
	i int
}

func (p *typeTextParser) errorf(format string, args ...any) error {
	return fmt.Errorf("catalog: bad type %q at %d: %s", p.s, p.i, fmt.Sprintf(format, args...))
}

func (p *typeTextParser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *typeTextParser) eat(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// word reads a run of letters, digits, underscores and spaces up to a
// delimiter: a type name, possibly of several words (DOUBLE PRECISION).
func (p *typeTextParser) word() string {
	p.space()
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '<' || c == '>' || c == ',' || c == '[' || c == '"' || c == '(' {
			break
		}
		p.i++
	}
	return strings.TrimSpace(p.s[start:p.i])
}

func (p *typeTextParser) parse(depth int) (Type, error) {
	if depth > MaxNestingDepth {
		return Unknown, ErrNestingTooDeep
	}
	name := strings.ToUpper(p.word())
	var t Type
	switch name {
	case "ARRAY":
		if !p.eat('<') {
			return Unknown, p.errorf("expected <")
		}
		e, err := p.parse(depth + 1)
		if err != nil {
			return Unknown, err
		}
		if !p.eat('>') {
			return Unknown, p.errorf("expected >")
		}
		if e.IsArray() {
			return Unknown, p.errorf("arrays of arrays")
		}
		t = ArrayOf(e)
	case "MAP":
		if !p.eat('<') {
			return Unknown, p.errorf("expected <")
		}
		k, err := p.parse(depth + 1)
		if err != nil {
			return Unknown, err
		}
		if !p.eat(',') {
			return Unknown, p.errorf("expected ,")
		}
		v, err := p.parse(depth + 1)
		if err != nil {
			return Unknown, err
		}
		if !p.eat('>') {
			return Unknown, p.errorf("expected >")
		}
		if t, err = MapOf(k, v); err != nil {
			return Unknown, err
		}
	case "STRUCT":
		if !p.eat('<') {
			return Unknown, p.errorf("expected <")
		}
		var fields []Field
		for !p.eat('>') {
			if len(fields) > 0 && !p.eat(',') {
				return Unknown, p.errorf("expected , or >")
			}
			f, err := p.field()
			if err != nil {
				return Unknown, err
			}
			if f.Type, err = p.parse(depth + 1); err != nil {
				return Unknown, err
			}
			fields = append(fields, f)
		}
		var err error
		if t, err = StructOf(fields); err != nil {
			return Unknown, err
		}
	default:
		var ok bool
		if t, ok = ParseType(name); !ok {
			return Unknown, p.errorf("unknown type %q", name)
		}
	}
	if p.eat('[') {
		if !p.eat(']') || t.IsArray() {
			return Unknown, p.errorf("bad array")
		}
		t = ArrayOf(t)
	}
	return t, nil
}

// field reads a field name: "quoted" or a bare word ending at a space.
func (p *typeTextParser) field() (Field, error) {
	p.space()
	if p.eat('"') {
		var b strings.Builder
		for {
			if p.i >= len(p.s) {
				return Field{}, p.errorf("unterminated field name")
			}
			c := p.s[p.i]
			p.i++
			if c == '"' {
				if p.i < len(p.s) && p.s[p.i] == '"' {
					p.i++
				} else {
					return Field{Name: b.String()}, nil
				}
			}
			b.WriteByte(c)
		}
	}
	start := p.i
	for p.i < len(p.s) && p.s[p.i] != ' ' && p.s[p.i] != '<' && p.s[p.i] != '>' && p.s[p.i] != ',' {
		p.i++
	}
	if p.i == start {
		return Field{}, p.errorf("expected a field name")
	}
	return Field{Name: p.s[start:p.i]}, nil
}
