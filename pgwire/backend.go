package pgwire

import (
	"context"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// Backend is what the server needs from the engine: sessions. node/
// supplies it.
type Backend interface {
	// Open starts a session for a new connection. Params are the startup
	// parameters the client sent (user, database, application_name, ...).
	// A *pgerr.Error refuses the connection with that code.
	Open(ctx context.Context, params map[string]string) (Session, error)
}

// Session runs the statements of one connection, in order.
type Session interface {
	// Query runs the text of one simple Query message: zero or more
	// statements separated by semicolons. For each statement it reports
	// the result to w (Columns, Row..., Complete; or Empty for an empty
	// or comment-only text). It stops at the first failing statement and
	// returns that error (a *pgerr.Error when the user caused it).
	// ctx is cancelled by a CancelRequest or when the connection drops.
	Query(ctx context.Context, text string, w ResultWriter) error
	// ParameterStatus returns the parameters to report at startup and
	// after SET (server_version, client_encoding, DateStyle, ...).
	ParameterStatus() map[string]string
	// Close ends the session.
	Close()
}

// ResultWriter receives one statement's result at a time.
type ResultWriter interface {
	// Columns starts a row-returning result. Called at most once per
	// statement, before any Row.
	Columns(cols []catalog.Column) error
	// Row sends one row; values are the Go values of the column types
	// (see catalog.Type), nil for NULL.
	Row(vals []any) error
	// Complete ends a statement with its command tag ("SELECT 3",
	// "INSERT 0 1", "CREATE TABLE", ...).
	Complete(tag string) error
	// Empty reports an empty query (EmptyQueryResponse).
	Empty() error
	// Notice sends a NoticeResponse.
	Notice(n *pgerr.Error) error
}
