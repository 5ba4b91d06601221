package jsonb

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"

	"github.com/basindb/basin/internal/pgerr"
)

// Kind is the type of a JSON value, in the order jsonb sorts them
// (Null lowest, Object highest).
type Kind uint8

const (
	Null Kind = iota
	String
	Number
	Bool
	Array
	Object
)

var kindNames = [...]string{Null: "null", String: "string", Number: "number", Bool: "boolean", Array: "array", Object: "object"}

// String is jsonb_typeof's name of k.
func (k Kind) String() string { return kindNames[k] }

// Value is a parsed JSON value.
type Value struct {
	Kind Kind
	// Str is a String's decoded text, or a Number's text: canonical
	// (numeric's output) from a jsonb parse, as written from a json one.
	Str  string
	Bool bool
	// Elems are an Array's elements.
	Elems []Value
	// Keys and Vals are an Object's members, in order: sorted by
	// length then bytes and unique from a jsonb parse, as written
	// (duplicates included) from a json one.
	Keys []string
	Vals []Value
	// Raw is the value's source text from a json parse: what json's
	// operators return.
	Raw string
}

// Parse reads text as a jsonb value (canonical: sorted unique keys, the
// last of duplicates winning, numbers as numeric writes them).
func Parse(text string) (Value, error) { return parse(text, true) }

// ParseJSON reads text as a json value: members kept as written, each
// value's source text in Raw.
func ParseJSON(text string) (Value, error) { return parse(text, false) }

// Validate checks text is JSON, with Postgres's error when not.
func Validate(text string) error {
	_, err := parse(text, false)
	return err
}

// Canonical returns jsonb's text of a JSON text.
func Canonical(text string) (string, error) {
	v, err := Parse(text)
	if err != nil {
		return "", err
	}
	return v.Text(), nil
}

type parser struct {
	s     string
	i     int
	jsonb bool
	depth int
}

func parse(text string, canon bool) (Value, error) {
	p := &parser{s: text, jsonb: canon}
	p.space()
	v, err := p.value()
	if err != nil {
		return Value{}, err
	}
	p.space()
	if p.i < len(p.s) {
		return Value{}, p.errExpected("end of input")
	}
	return v, nil
}

// syntaxErr is Postgres's error for bad JSON input; detail says what
// was wrong, as Postgres's does.
func syntaxErr(detail string, args ...any) *pgerr.Error {
	return pgerr.New(pgerr.InvalidTextRepresentation, "invalid input syntax for type json").WithDetail(detail, args...)
}

// token returns the token at p.i as Postgres's messages quote it.
func (p *parser) token() string {
	if p.i >= len(p.s) {
		return ""
	}
	c := p.s[p.i]
	switch c {
	case '{', '}', '[', ']', ',', ':':
		return string(c)
	case '"':
		j := p.i + 1
		for j < len(p.s) && p.s[j] != '"' {
			if p.s[j] == '\\' {
				j++
			}
			j++
		}
		return p.s[p.i:min(j+1, len(p.s))]
	}
	j := p.i
	for j < len(p.s) && !strings.ContainsRune(" \t\n\r{}[],:\"", rune(p.s[j])) {
		j++
	}
	if j == p.i {
		_, n := utf8.DecodeRuneInString(p.s[p.i:])
		j += n
	}
	return p.s[p.i:j]
}

func (p *parser) errExpected(what string) error {
	if p.i >= len(p.s) {
		return syntaxErr("The input string ended unexpectedly.")
	}
	tok := p.token()
	if !validToken(tok) {
		return syntaxErr("Token %q is invalid.", tok)
	}
	return syntaxErr("Expected %s, but found %q.", what, tok)
}

// validToken reports whether tok is a JSON token (so a wrong one is
// "expected X", not "invalid").
func validToken(tok string) bool {
	switch tok {
	case "{", "}", "[", "]", ",", ":", "true", "false", "null":
		return true
	}
	if strings.HasPrefix(tok, `"`) {
		return true
	}
	return numberEnd(tok, 0) == len(tok)
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// maxDepth bounds nesting: Postgres stops at its stack depth limit,
// basin earlier than a goroutine's stack would.
const maxDepth = 6400

func (p *parser) value() (Value, error) {
	if p.i >= len(p.s) {
		return Value{}, syntaxErr("The input string ended unexpectedly.")
	}
	start := p.i
	var v Value
	var err error
	switch c := p.s[p.i]; {
	case c == '{':
		v, err = p.object()
	case c == '[':
		v, err = p.array()
	case c == '"':
		var s string
		s, err = p.str()
		v = Value{Kind: String, Str: s}
	case c == '-' || c >= '0' && c <= '9':
		v, err = p.number()
	default:
		tok := p.token()
		switch tok {
		case "true", "false":
			v = Value{Kind: Bool, Bool: tok == "true"}
		case "null":
			v = Value{Kind: Null}
		default:
			return Value{}, p.errExpected("JSON value")
		}
		p.i += len(tok)
	}
	if err != nil {
		return Value{}, err
	}
	if !p.jsonb {
		v.Raw = p.s[start:p.i]
	}
	return v, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return pgerr.New(pgerr.StatementTooComplex, "stack depth limit exceeded").
			WithHint("JSON nested deeper than %d levels is not supported.", maxDepth)
	}
	return nil
}

func (p *parser) object() (Value, error) {
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	defer func() { p.depth-- }()
	p.i++ // {
	v := Value{Kind: Object}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return v, nil
	}
	for first := true; ; first = false {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			if first {
				return Value{}, p.errExpected(`string or "}"`)
			}
			return Value{}, p.errExpected("string")
		}
		k, err := p.str()
		if err != nil {
			return Value{}, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return Value{}, p.errExpected(`":"`)
		}
		p.i++
		p.space()
		val, err := p.value()
		if err != nil {
			return Value{}, err
		}
		v.Keys = append(v.Keys, k)
		v.Vals = append(v.Vals, val)
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			break
		}
		return Value{}, p.errExpected(`"," or "}"`)
	}
	if p.jsonb {
		v.canonicalize()
	}
	return v, nil
}

// canonicalize sorts an object's members as jsonb keeps them and drops
// all but the last of each duplicate key.
func (v *Value) canonicalize() {
	idx := make([]int, len(v.Keys))
	for i := range idx {
		idx[i] = i
	}
	// A stable sort keeps duplicates in input order; the last wins.
	sortStable(idx, func(a, b int) bool { return keyLess(v.Keys[a], v.Keys[b]) })
	keys := make([]string, 0, len(idx))
	vals := make([]Value, 0, len(idx))
	for n, i := range idx {
		if n+1 < len(idx) && v.Keys[idx[n+1]] == v.Keys[i] {
			continue
		}
		keys = append(keys, v.Keys[i])
		vals = append(vals, v.Vals[i])
	}
	v.Keys, v.Vals = keys, vals
}

func sortStable(idx []int, less func(a, b int) bool) {
	// Insertion sort for small objects, merge sort beyond.
	if len(idx) <= 12 {
		for i := 1; i < len(idx); i++ {
			for j := i; j > 0 && less(idx[j], idx[j-1]); j-- {
				idx[j], idx[j-1] = idx[j-1], idx[j]
			}
		}
		return
	}
	mid := len(idx) / 2
	l := append([]int(nil), idx[:mid]...)
	r := append([]int(nil), idx[mid:]...)
	sortStable(l, less)
	sortStable(r, less)
	i, j, k := 0, 0, 0
	for i < len(l) && j < len(r) {
		if less(r[j], l[i]) {
			idx[k] = r[j]
			j++
		} else {
			idx[k] = l[i]
			i++
		}
		k++
	}
	k += copy(idx[k:], l[i:])
	copy(idx[k:], r[j:])
}

// keyLess is jsonb's key order: shorter keys first, then bytewise.
func keyLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func (p *parser) array() (Value, error) {
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	defer func() { p.depth-- }()
	p.i++ // [
	v := Value{Kind: Array}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return v, nil
	}
	for {
		p.space()
		e, err := p.value()
		if err != nil {
			return Value{}, err
		}
		v.Elems = append(v.Elems, e)
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return v, nil
		}
		return Value{}, p.errExpected(`"," or "]"`)
	}
}

// numberEnd returns the end of the JSON number starting at s[i], or i
// when there is none.
func numberEnd(s string, i int) int {
	j := i
	if j < len(s) && s[j] == '-' {
		j++
	}
	digits := func() int {
		k := j
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(s) && s[j] == '0' {
		j++
	} else if digits() == 0 {
		return i
	}
	if j < len(s) && s[j] == '.' {
		j++
		if digits() == 0 {
			return i
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if digits() == 0 {
			return i
		}
	}
	return j
}

func (p *parser) number() (Value, error) {
	end := numberEnd(p.s, p.i)
	tok := p.token()
	if end == p.i || end-p.i != len(tok) {
		return Value{}, syntaxErr("Token %q is invalid.", tok)
	}
	text := p.s[p.i:end]
	p.i = end
	if !p.jsonb {
		return Value{Kind: Number, Str: text}, nil
	}
	if !numericFits(text) {
		return Value{}, pgerr.New(pgerr.NumericValueOutOfRange, "value overflows numeric format")
	}
	return Value{Kind: Number, Str: CanonicalNumber(text)}, nil
}

// numericFits reports whether numeric holds the number: at most 131072
// digits before the decimal point and 16383 after.
func numericFits(text string) bool {
	d, _, err := apd.NewFromString(text)
	if err != nil {
		return false
	}
	scale := -int64(d.Exponent)
	if scale > 16383 {
		return false
	}
	return d.IsZero() || d.NumDigits()+int64(d.Exponent) <= 131072
}

// CanonicalNumber returns numeric's output of a JSON number: exponents
// expanded, the scale kept (1.50 stays 1.50, 1.5e1 is 15), no -0.
func CanonicalNumber(text string) string {
	d, _, err := apd.NewFromString(text)
	if err != nil {
		return text
	}
	if d.Exponent > 0 {
		// numeric's display scale is never negative: 1e2 is 100.
		var c apd.Decimal
		if _, err := apd.BaseContext.WithPrecision(uint32(d.NumDigits()+int64(d.Exponent))).Quantize(&c, d, 0); err == nil {
			d = &c
		}
	}
	if d.IsZero() {
		d.Negative = false
	}
	return d.Text('f')
}

func (p *parser) str() (string, error) {
	p.i++ // opening quote
	start := p.i
	var b []byte
	for {
		if p.i >= len(p.s) {
			return "", syntaxErr("The input string ended unexpectedly.")
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			var s string
			if b == nil {
				s = p.s[start:p.i]
			} else {
				s = string(b)
			}
			p.i++
			return s, nil
		case c < 0x20:
			return "", syntaxErr("Character with value 0x%02x must be escaped.", c)
		case c == '\\':
			if b == nil {
				b = append([]byte(nil), p.s[start:p.i]...)
			}
			if p.i+1 >= len(p.s) {
				return "", syntaxErr("The input string ended unexpectedly.")
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, err := p.unicodeEscape()
				if err != nil {
					return "", err
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", syntaxErr("Escape sequence \"\\%c\" is invalid.", e)
			}
		default:
			if b != nil {
				b = append(b, c)
			}
			p.i++
		}
	}
}

// unicodeEscape reads the hex digits of \uXXXX (p.i after the u),
// joining a surrogate pair; jsonb refuses \u0000, as Postgres does.
func (p *parser) unicodeEscape() (rune, error) {
	hex4 := func() (rune, bool) {
		if p.i+4 > len(p.s) {
			return 0, false
		}
		n, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 16)
		if err != nil {
			return 0, false
		}
		p.i += 4
		return rune(n), true
	}
	r, ok := hex4()
	if !ok {
		return 0, syntaxErr("\"\\u\" must be followed by four hexadecimal digits.")
	}
	switch {
	case utf16.IsSurrogate(r) && r < 0xDC00:
		if p.i+2 > len(p.s) || p.s[p.i] != '\\' || p.s[p.i+1] != 'u' {
			return 0, syntaxErr("Unicode low surrogate must follow a high surrogate.")
		}
		p.i += 2
		lo, ok := hex4()
		if !ok {
			return 0, syntaxErr("\"\\u\" must be followed by four hexadecimal digits.")
		}
		if lo < 0xDC00 || lo > 0xDFFF {
			return 0, syntaxErr("Unicode low surrogate must follow a high surrogate.")
		}
		return utf16.DecodeRune(r, lo), nil
	case utf16.IsSurrogate(r):
		return 0, syntaxErr("Unicode low surrogate must follow a high surrogate.")
	case r == 0 && p.jsonb:
		return 0, pgerr.New(pgerr.UntranslatableCharacter, "unsupported Unicode escape sequence").
			WithDetail("\\u0000 cannot be converted to text.")
	}
	return r, nil
}

// Text returns the canonical (jsonb) text of v: one space after each
// ':' and ','.
func (v Value) Text() string {
	var b bytes.Buffer
	v.write(&b, -1, 0)
	return b.String()
}

// Pretty returns jsonb_pretty's text of v: four-space indents, one
// member or element a line.
func (v Value) Pretty() string {
	var b bytes.Buffer
	v.write(&b, 0, 0)
	return b.String()
}

// Compact returns v's text with no white space (json_strip_nulls's
// output).
func (v Value) Compact() string {
	var b bytes.Buffer
	v.write(&b, compact, 0)
	return b.String()
}

// compact is write's indent for Compact; -1 is one line with spaces.
const compact = -2

// JSONText is v's text as a json value: its source when it has one.
func (v Value) JSONText() string {
	if v.Raw != "" {
		return v.Raw
	}
	return v.Text()
}

// write appends v; indent < 0 writes on one line.
func (v Value) write(b *bytes.Buffer, indent, level int) {
	newline := func(level int) {
		if indent >= 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat("    ", level))
		}
	}
	switch v.Kind {
	case Null:
		b.WriteString("null")
	case Bool:
		if v.Bool {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case Number:
		b.WriteString(v.Str)
	case String:
		WriteString(b, v.Str)
	case Array:
		b.WriteByte('[')
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteByte(',')
				if indent == -1 {
					b.WriteByte(' ')
				}
			}
			newline(level + 1)
			e.write(b, indent, level+1)
		}
		if indent >= 0 {
			newline(level)
		}
		b.WriteByte(']')
	case Object:
		b.WriteByte('{')
		for i, k := range v.Keys {
			if i > 0 {
				b.WriteByte(',')
				if indent == -1 {
					b.WriteByte(' ')
				}
			}
			newline(level + 1)
			WriteString(b, k)
			b.WriteByte(':')
			if indent != compact {
				b.WriteByte(' ')
			}
			v.Vals[i].write(b, indent, level+1)
		}
		if indent >= 0 {
			newline(level)
		}
		b.WriteByte('}')
	}
}

// WriteString appends s as a JSON string as Postgres's escape_json
// writes it: the short escapes, \u00XX for other control characters,
// everything else as is.
func WriteString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[c>>4])
				b.WriteByte("0123456789abcdef"[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// Quote returns s as a JSON string.
func Quote(s string) string {
	var b bytes.Buffer
	WriteString(&b, s)
	return b.String()
}
