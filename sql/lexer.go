package sql

import (
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/internal/pgerr"
)

// tokKind classifies a Postgres token.
type tokKind uint8

const (
	// tokEOF ends every statement's token list. Its pos is the terminating
	// semicolon (val ";") or the end of the text (val "").
	tokEOF tokKind = iota
	// tokIdent is an unquoted word, keyword or identifier; val is folded
	// to lower case as Postgres does.
	tokIdent
	// tokQuotedIdent is a "quoted identifier"; val is the name as written.
	tokQuotedIdent
	// tokString is a string constant in any of its spellings ('..', E'..',
	// $$..$$, continued over lines); val is the decoded value.
	tokString
	// tokNumber is a numeric constant; val is what TiDB is given: decimal
	// digits for an integer that fits int64, else a float spelling.
	tokNumber
	// tokParam is $n; n is in param.
	tokParam
	// tokOp is an operator or punctuation: ( ) , . ; :: [ ] and operator
	// runs such as <= or ||. val is normalized (!= becomes <>). A
	// character Postgres has no token for is a one-character tokOp too,
	// so that the parser reports it as a syntax error where it stands.
	tokOp
	// tokLiterals is the constants of a long IN list and tokRows the
	// rows of a long INSERT ... VALUES, folded into one token each
	// (literals.go). pos and end span the constants or rows; param is
	// how many there are; val is empty.
	tokLiterals
	tokRows
)

// token is one lexical token. pos and end are byte offsets into the
// full text given to Parse, so positions survive splitting.
type token struct {
	kind     tokKind
	val      string
	pos, end int
	isInt    bool // tokNumber: an integer constant that fits int64
	param    int  // tokParam: n of $n
}

func (t token) is(kind tokKind, val string) bool { return t.kind == kind && t.val == val }

// isWord reports whether t is the unquoted word w (w in lower case).
func (t token) isWord(w string) bool { return t.kind == tokIdent && t.val == w }

func (t token) isOp(op string) bool { return t.kind == tokOp && t.val == op }

// lexer turns Postgres text into tokens. It implements the parts of
// Postgres's scan.l basin needs: standard_conforming_strings is on (a
// backslash in '...' is an ordinary character), block comments nest,
// unquoted identifiers fold to lower case.
type lexer struct {
	text string
	i    int
	toks []token
	// fold folds long runs of constants (literals.go); run is the run
	// being collected and stmt the index of the current statement's
	// first token.
	fold bool
	run  litRun
	stmt int
}

// lex tokenizes the whole text, folding long runs of constants.
// Statements are split afterwards, on the ";" tokens, so a semicolon
// inside a string or comment never splits.
func lex(text string) ([]token, *pgerr.Error) {
	l := &lexer{text: text, toks: make([]token, 0, lexEstimate(text)), fold: true}
	return l.all()
}

// lexEstimate is how many tokens to make room for at first: about one
// per four bytes of a short text (a token and the space after it), so
// that a statement's tokens are one allocation rather than a doubling
// series; a long text (a large INSERT) grows from a bounded start.
func lexEstimate(text string) int { return min(len(text)/4+4, 256) }

// all lexes the rest of the text.
func (l *lexer) all() ([]token, *pgerr.Error) {
	var nest nesting
	for {
		if err := l.skipSpace(); err != nil {
			return nil, err
		}
		if l.i >= len(l.text) {
			if l.fold {
				l.endRun()
			}
			return l.toks, nil
		}
		n := len(l.toks)
		if err := l.next(); err != nil {
			return nil, err
		}
		for _, t := range l.toks[n:] {
			if err := nest.token(l.text, t); err != nil {
				return nil, err
			}
		}
		if l.fold && len(l.toks) == n+1 {
			l.stepRun(nest.depth)
		}
	}
}

func (l *lexer) emit(kind tokKind, val string, pos int) {
	l.toks = append(l.toks, token{kind: kind, val: val, pos: pos, end: l.i})
}

// lexErr is an error detected by the lexer, reported at or near the text
// from pos on, as Postgres does for unterminated constructs.
func (l *lexer) lexErr(pos int, msg string) *pgerr.Error {
	near := l.text[pos:]
	return &pgerr.Error{
		Code:     pgerr.SyntaxError,
		Message:  msg + " at or near " + quoteNear(near),
		Position: charPos(l.text, pos),
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isIdentCont(c byte) bool {
	return isIdentStart(c) || isDigit(c) || c == '$'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isOpChar reports the characters Postgres builds operators from.
func isOpChar(c byte) bool { return strings.IndexByte("+-*/<>=~!@#%^&|`?", c) >= 0 }

// skipSpace skips whitespace and comments.
func (l *lexer) skipSpace() *pgerr.Error {
	for l.i < len(l.text) {
		c := l.text[l.i]
		switch {
		case isSpace(c):
			l.i++
		case strings.HasPrefix(l.text[l.i:], "--"):
			for l.i < len(l.text) && l.text[l.i] != '\n' && l.text[l.i] != '\r' {
				l.i++
			}
		case strings.HasPrefix(l.text[l.i:], "/*"):
			if err := l.blockComment(); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// blockComment skips a /* */ comment; they nest in Postgres.
func (l *lexer) blockComment() *pgerr.Error {
	start := l.i
	depth := 0
	for l.i < len(l.text) {
		switch {
		case strings.HasPrefix(l.text[l.i:], "/*"):
			depth++
			l.i += 2
		case strings.HasPrefix(l.text[l.i:], "*/"):
			depth--
			l.i += 2
			if depth == 0 {
				return nil
			}
		default:
			l.i++
		}
	}
	return l.lexErr(start, "unterminated /* comment")
}

func (l *lexer) next() *pgerr.Error {
	start := l.i
	c := l.text[l.i]
	rest := l.text[l.i:]
	switch {
	case c == '\'':
		return l.quoted(start, false)
	case (c == 'e' || c == 'E') && len(rest) > 1 && rest[1] == '\'':
		l.i++
		return l.quoted(start, true)
	case (c == 'n' || c == 'N') && len(rest) > 1 && rest[1] == '\'':
		l.i++ // national character strings are ordinary strings in UTF-8
		return l.quoted(start, false)
	case (c == 'b' || c == 'B' || c == 'x' || c == 'X') && len(rest) > 1 && rest[1] == '\'':
		return &pgerr.Error{Code: pgerr.FeatureNotSupported,
			Message: "bit-string constants are not supported", Position: charPos(l.text, start)}
	case (c == 'u' || c == 'U') && (strings.HasPrefix(rest[1:], "&'") || strings.HasPrefix(rest[1:], "&\"")):
		return &pgerr.Error{Code: pgerr.FeatureNotSupported,
			Message: "Unicode escapes (U&'...', U&\"...\") are not supported", Position: charPos(l.text, start)}
	case c == '"':
		return l.quotedIdent(start)
	case c == '$':
		return l.dollar(start)
	case isIdentStart(c):
		return l.word(start)
	case isDigit(c) || c == '.' && len(rest) > 1 && isDigit(rest[1]):
		return l.number(start)
	case c == ':':
		if strings.HasPrefix(rest, "::") {
			l.i += 2
			l.emit(tokOp, "::", start)
			return nil
		}
		l.i++
		l.emit(tokOp, ":", start)
		return nil
	case strings.IndexByte("(),;.[]", c) >= 0:
		l.i++
		l.emit(tokOp, string(c), start)
		return nil
	case isOpChar(c):
		l.operator(start)
		return nil
	}
	// Anything else is a character no token starts with. Postgres hands
	// it to the grammar, which reports a syntax error at it.
	_, size := utf8.DecodeRuneInString(rest)
	l.i += size
	l.emit(tokOp, rest[:size], start)
	return nil
}

func (l *lexer) word(start int) *pgerr.Error {
	for l.i < len(l.text) && isIdentCont(l.text[l.i]) {
		l.i++
	}
	l.emit(tokIdent, asciiLower(l.text[start:l.i]), start)
	return nil
}

// asciiLower folds ASCII letters only, as Postgres does for identifiers
// in a multibyte encoding.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func (l *lexer) quotedIdent(start int) *pgerr.Error {
	l.i++
	var b strings.Builder
	for {
		j := strings.IndexByte(l.text[l.i:], '"')
		if j < 0 {
			return l.lexErr(start, "unterminated quoted identifier")
		}
		b.WriteString(l.text[l.i : l.i+j])
		l.i += j + 1
		if l.i < len(l.text) && l.text[l.i] == '"' {
			b.WriteByte('"')
			l.i++
			continue
		}
		break
	}
	if b.Len() == 0 {
		return l.lexErr(start, "zero-length delimited identifier")
	}
	l.emit(tokQuotedIdent, b.String(), start)
	return nil
}

// quoted lexes a '...' constant whose opening quote is at l.i; escapes
// selects E'...' backslash processing. Postgres joins constants separated
// by whitespace that includes a newline ('a'\n'b' is 'ab').
func (l *lexer) quoted(start int, escapes bool) *pgerr.Error {
	var b strings.Builder
	for {
		l.i++ // opening quote
		if err := l.quotedBody(start, escapes, &b); err != nil {
			return err
		}
		if !l.continuation() {
			break
		}
	}
	s := b.String()
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return &pgerr.Error{Code: pgerr.CharacterNotInRepertoire,
			Message:  "invalid byte sequence for encoding \"UTF8\" in string constant",
			Position: charPos(l.text, start)}
	}
	l.emit(tokString, s, start)
	return nil
}

func (l *lexer) quotedBody(start int, escapes bool, b *strings.Builder) *pgerr.Error {
	for l.i < len(l.text) {
		c := l.text[l.i]
		switch {
		case c == '\'':
			if l.i+1 < len(l.text) && l.text[l.i+1] == '\'' {
				b.WriteByte('\'')
				l.i += 2
				continue
			}
			l.i++
			return nil
		case c == '\\' && escapes:
			if err := l.escape(b); err != nil {
				return err
			}
		default:
			b.WriteByte(c)
			l.i++
		}
	}
	return l.lexErr(start, "unterminated quoted string")
}

// continuation reports whether a string constant continues: whitespace
// and -- comments with at least one newline, then a quote. It leaves l.i
// on the quote when it does.
func (l *lexer) continuation() bool {
	j := l.i
	for j < len(l.text) && l.text[j] != '\n' && l.text[j] != '\r' {
		switch {
		case l.text[j] == ' ' || l.text[j] == '\t' || l.text[j] == '\f':
			j++
		case strings.HasPrefix(l.text[j:], "--"):
			for j < len(l.text) && l.text[j] != '\n' && l.text[j] != '\r' {
				j++
			}
		default:
			return false
		}
	}
	if j >= len(l.text) {
		return false
	}
	for j < len(l.text) {
		switch {
		case isSpace(l.text[j]):
			j++
		case strings.HasPrefix(l.text[j:], "--"):
			for j < len(l.text) && l.text[j] != '\n' && l.text[j] != '\r' {
				j++
			}
		case l.text[j] == '\'':
			l.i = j
			return true
		default:
			return false
		}
	}
	return false
}

// escape decodes one backslash escape of an E'...' string at l.i.
func (l *lexer) escape(b *strings.Builder) *pgerr.Error {
	at := l.i
	l.i++ // backslash
	if l.i >= len(l.text) {
		return nil // the unterminated-string error follows
	}
	c := l.text[l.i]
	l.i++
	switch c {
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case '0', '1', '2', '3', '4', '5', '6', '7':
		v := int(c - '0')
		for n := 1; n < 3 && l.i < len(l.text) && l.text[l.i] >= '0' && l.text[l.i] <= '7'; n++ {
			v = v*8 + int(l.text[l.i]-'0')
			l.i++
		}
		b.WriteByte(byte(v))
	case 'x':
		v, n := 0, 0
		for ; n < 2 && l.i < len(l.text) && isHex(l.text[l.i]); n++ {
			v = v*16 + hexVal(l.text[l.i])
			l.i++
		}
		if n == 0 {
			b.WriteByte('x') // \x without digits is a plain x, as in Postgres
			return nil
		}
		b.WriteByte(byte(v))
	case 'u', 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		if l.i+n > len(l.text) {
			return l.escapeErr(at)
		}
		v, err := strconv.ParseUint(l.text[l.i:l.i+n], 16, 32)
		if err != nil || !utf8.ValidRune(rune(v)) || v == 0 {
			return l.escapeErr(at)
		}
		l.i += n
		b.WriteRune(rune(v))
	default:
		// \\, \' and any other character stand for themselves.
		b.WriteByte(c)
	}
	return nil
}

func (l *lexer) escapeErr(at int) *pgerr.Error {
	return &pgerr.Error{Code: pgerr.SyntaxError, Message: "invalid Unicode escape value",
		Position: charPos(l.text, at)}
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func hexVal(c byte) int {
	switch {
	case isDigit(c):
		return int(c - '0')
	case c >= 'a':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}

// dollar lexes $n parameters and $tag$...$tag$ strings.
func (l *lexer) dollar(start int) *pgerr.Error {
	rest := l.text[start+1:]
	if len(rest) > 0 && isDigit(rest[0]) {
		j := 0
		for j < len(rest) && isDigit(rest[j]) {
			j++
		}
		l.i = start + 1 + j
		if l.i < len(l.text) && isIdentCont(l.text[l.i]) {
			for l.i < len(l.text) && isIdentCont(l.text[l.i]) {
				l.i++
			}
			return l.junk(start, "trailing junk after parameter")
		}
		n, err := strconv.Atoi(rest[:j])
		if err != nil || n == 0 || n > maxParams {
			return &pgerr.Error{Code: pgerr.UndefinedParameter,
				Message: "there is no parameter " + l.text[start:l.i], Position: charPos(l.text, start)}
		}
		l.toks = append(l.toks, token{kind: tokParam, val: l.text[start:l.i], pos: start, end: l.i, param: n})
		return nil
	}
	// A dollar-quote tag is an identifier without $; $$ has an empty tag.
	j := 0
	if len(rest) > 0 && isIdentStart(rest[0]) {
		for j < len(rest) && isIdentCont(rest[j]) && rest[j] != '$' {
			j++
		}
	}
	if j >= len(rest) || rest[j] != '$' {
		// A lone $ is not a token in Postgres.
		l.i = start + 1
		l.emit(tokOp, "$", start)
		return nil
	}
	delim := l.text[start : start+j+2]
	bodyStart := start + len(delim)
	k := strings.Index(l.text[bodyStart:], delim)
	if k < 0 {
		return l.lexErr(start, "unterminated dollar-quoted string")
	}
	s := l.text[bodyStart : bodyStart+k]
	l.i = bodyStart + k + len(delim)
	if strings.IndexByte(s, 0) >= 0 {
		return &pgerr.Error{Code: pgerr.CharacterNotInRepertoire,
			Message:  "invalid byte sequence for encoding \"UTF8\" in string constant",
			Position: charPos(l.text, start)}
	}
	l.emit(tokString, s, start)
	return nil
}

// maxParams bounds $n, as the wire protocol does (a Bind carries at most
// 65535 parameters).
const maxParams = 65535

func (l *lexer) junk(start int, msg string) *pgerr.Error {
	return &pgerr.Error{Code: pgerr.SyntaxError,
		Message:  msg + " at or near " + quoteNear(l.text[start:l.i]),
		Position: charPos(l.text, start)}
}

// number lexes a numeric constant: 42, 4.2, .42, 4.2e1, and the
// Postgres 16 spellings 0x2A, 0o52, 0b101010 and 1_000.
func (l *lexer) number(start int) *pgerr.Error {
	t := l.text
	radix := 10
	if t[start] == '0' && start+1 < len(t) {
		switch t[start+1] {
		case 'x', 'X':
			radix = 16
		case 'o', 'O':
			radix = 8
		case 'b', 'B':
			radix = 2
		}
	}
	if radix != 10 {
		l.i = start + 2
		digits := l.digits(func(c byte) bool { return isHex(c) && hexVal(c) < radix })
		if digits == "" || l.i < len(t) && isIdentCont(t[l.i]) {
			return l.trailingJunk(start)
		}
		v, _ := new(big.Int).SetString(digits, radix)
		l.emitInt(v, start)
		return nil
	}
	l.i = start
	intPart := l.digits(isDigit)
	isInt := true
	frac := ""
	// "1..2" is 1 followed by ..2 in Postgres; only a lone dot belongs to
	// the number.
	if l.i < len(t) && t[l.i] == '.' && !(l.i+1 < len(t) && t[l.i+1] == '.') {
		isInt = false
		l.i++
		frac = l.digits(isDigit)
	}
	exp := ""
	if l.i < len(t) && (t[l.i] == 'e' || t[l.i] == 'E') {
		j := l.i + 1
		if j < len(t) && (t[j] == '+' || t[j] == '-') {
			j++
		}
		if j < len(t) && isDigit(t[j]) {
			sign := t[l.i+1 : j]
			l.i = j
			exp = "e" + sign + l.digits(isDigit)
			isInt = false
		}
	}
	if l.i < len(t) && isIdentCont(t[l.i]) {
		return l.trailingJunk(start)
	}
	if isInt {
		if len(intPart) <= 18 { // fits int64: no big.Int
			l.toks = append(l.toks, token{kind: tokNumber, val: strings.TrimLeft(intPart, "0"), pos: start, end: l.i, isInt: true})
			if l.toks[len(l.toks)-1].val == "" {
				l.toks[len(l.toks)-1].val = "0"
			}
			return nil
		}
		v, _ := new(big.Int).SetString(intPart, 10)
		l.emitInt(v, start)
		return nil
	}
	f, err := strconv.ParseFloat(intPart+"."+frac+exp, 64)
	if err != nil {
		if _, nerr := numeric.Parse(intPart + "." + frac + exp); nerr == nil {
			// Beyond a double, within numeric (1e400): TiDB reads a
			// stand-in; the constant's value comes from the text
			// (numericToken).
			l.toks = append(l.toks, token{kind: tokNumber, val: "1.0", pos: start, end: l.i})
			return nil
		}
		return &pgerr.Error{Code: pgerr.NumericValueOutOfRange,
			Message:  "\"" + t[start:l.i] + "\" is out of range for type double precision",
			Position: charPos(t, start)}
	}
	l.toks = append(l.toks, token{kind: tokNumber, val: floatText(f), pos: start, end: l.i})
	return nil
}

// digits consumes digits accepted by ok, with single underscores between
// them, and returns them without the underscores.
func (l *lexer) digits(ok func(byte) bool) string {
	t := l.text
	// Most constants have no underscores: their digits are the text.
	start := l.i
	for l.i < len(t) && ok(t[l.i]) {
		l.i++
	}
	if l.i >= len(t) || t[l.i] != '_' {
		return t[start:l.i]
	}
	l.i = start
	var b strings.Builder
	for l.i < len(t) {
		c := t[l.i]
		if ok(c) {
			b.WriteByte(c)
			l.i++
			continue
		}
		if c == '_' && b.Len() > 0 && l.i+1 < len(t) && ok(t[l.i+1]) {
			l.i++
			continue
		}
		break
	}
	return b.String()
}

func (l *lexer) trailingJunk(start int) *pgerr.Error {
	for l.i < len(l.text) && isIdentCont(l.text[l.i]) {
		l.i++
	}
	return l.junk(start, "trailing junk after numeric literal")
}

// emitInt emits an integer constant. One beyond int64 is numeric, as
// in Postgres: its value is read from the text (numericToken), and TiDB
// gets its digits, or a stand-in past what it reads as a decimal.
func (l *lexer) emitInt(v *big.Int, start int) {
	tok := token{kind: tokNumber, pos: start, end: l.i}
	if v.IsInt64() {
		tok.val = v.String()
		tok.isInt = true
	} else if s := v.String(); len(s) <= 60 {
		tok.val = s
	} else {
		tok.val = "1.0" // TiDB reads a stand-in; numericToken the value
	}
	l.toks = append(l.toks, tok)
}

// floatText spells f so that TiDB reads it back as exactly f and never as
// an integer.
func floatText(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}

// operator lexes an operator the way Postgres does: the longest run of
// operator characters, stopping before a comment start, and without a
// trailing + or - unless the run contains a character that only
// user-defined operators use (so that a<-1 is a < -1).
func (l *lexer) operator(start int) {
	t := l.text
	j := start
	for j < len(t) && isOpChar(t[j]) {
		if j > start && (strings.HasPrefix(t[j:], "--") || strings.HasPrefix(t[j:], "/*")) {
			break
		}
		j++
	}
	op := t[start:j]
	if len(op) > 1 && !strings.ContainsAny(op, "~!@#%^&|`?") {
		for len(op) > 1 && (op[len(op)-1] == '+' || op[len(op)-1] == '-') {
			op = op[:len(op)-1]
		}
	}
	l.i = start + len(op)
	if op == "!=" {
		op = "<>"
	}
	l.emit(tokOp, op, start)
}

// charPos converts a byte offset into text to the 1-based character
// position Postgres reports.
func charPos(text string, off int) int {
	if off > len(text) {
		off = len(text)
	}
	return utf8.RuneCountInString(text[:off]) + 1
}

// quoteNear quotes the text of an "at or near" message the way Postgres
// does, verbatim between double quotes; only a NUL, which would cut the
// message short on the wire, is spelled out.
func quoteNear(s string) string {
	return `"` + strings.ReplaceAll(s, "\x00", `\0`) + `"`
}
