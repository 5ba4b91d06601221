package sql

// Parsed is a statement with the text it was parsed from.
type Parsed struct {
	Stmt Statement
	// Text is the statement's own text, from its first token to its last:
	// without the separating semicolon and the whitespace and comments
	// around it. DDL is recorded with it, and it parses back to Stmt.
	Text string
}

// ParseStatements is Parse that also returns each statement's text.
func ParseStatements(text string) ([]Parsed, error) {
	return parse(text)
}
