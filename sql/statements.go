package sql

import "strings"

// Parsed is a statement with the text it was parsed from.
type Parsed struct {
	Stmt Statement
	// Text is the statement's own text, without the separating
	// semicolon; DDL is recorded with it.
	Text string
}

// ParseStatements is Parse that also returns each statement's text.
func ParseStatements(text string) ([]Parsed, error) {
	stmts, err := Parse(text)
	if err != nil {
		return nil, err
	}
	out := make([]Parsed, len(stmts))
	for i, s := range stmts {
		out[i] = Parsed{Stmt: s, Text: strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text), ";"))}
	}
	return out, nil
}
