package pgwire

import (
	"context"
	"net"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
)

// Backend is what the server needs from the engine: sessions. node/
// supplies it.
type Backend interface {
	// Open starts a session for a new connection. Params are the startup
	// parameters the client sent (user, database, application_name, ...);
	// info says which connection it is. A *pgerr.Error refuses the
	// connection with that code.
	Open(ctx context.Context, params map[string]string, info ConnInfo) (Session, error)
}

// ConnInfo describes the connection a session is opened for.
type ConnInfo struct {
	// PID is the process ID sent in BackendKeyData, unique among the
	// server's sessions while this one lasts: what pg_backend_pid()
	// returns, and what Server.CancelBackend and TerminateBackend take.
	PID uint32
	// RemoteAddr is the client's address.
	RemoteAddr net.Addr
	// TLS is set when the connection is encrypted.
	TLS bool
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
	// Prepare parses one statement for the extended protocol (a Parse
	// message) and plans it where it can. paramTypes are the types the
	// client declared for $1, $2, ...; catalog.Unknown where it left a
	// type to the server. An empty or comment-only text is an empty
	// statement; more than one statement is 42601. ctx is cancelled by a
	// CancelRequest or when the connection drops.
	Prepare(ctx context.Context, text string, paramTypes []catalog.Type) (PreparedStatement, error)
	// ParameterStatus returns the parameters to report at startup and
	// after SET (server_version, client_encoding, DateStyle, ...). It is
	// called at every Sync and Query: it may return the map it returned
	// the last time only if nothing in it changed, and pgwire then
	// compares nothing; it never modifies a map it returned.
	ParameterStatus() map[string]string
	// TxnStatus is the transaction status for ReadyForQuery: 'I' outside
	// a transaction block, 'T' inside one, 'E' inside a failed one. When
	// it is 'I', pgwire closes every portal: portals end with their
	// transaction, as in Postgres.
	TxnStatus() byte
	// SetWake is called once, after Open and before anything else, with
	// the function the session calls whenever it has queued something
	// for Notifications to return (LISTEN/NOTIFY). wake may be called
	// from any goroutine, at any time, also after Close; it never blocks
	// and does nothing once the connection has ended.
	SetWake(wake func())
	// Notifications removes and returns what the session has queued for
	// the client: notifications in the order they were queued, and a
	// notice to send before them (nil: none), which says what the
	// session had to drop. pgwire calls it after a wake, only while the
	// transaction status is 'I': on another goroutine while the
	// connection waits for the client's next message, or on the
	// connection's before ReadyForQuery; never while another method of
	// the session runs.
	Notifications() ([]Notification, *pgerr.Error)
	// Close ends the session.
	Close()
}

// Notification is an asynchronous notification for the client, sent as
// a NotificationResponse.
type Notification struct {
	// PID is the process ID of the session that sent it (BackendKeyData's,
	// which may be this session's own).
	PID     uint32
	Channel string
	Payload string
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
	// CopyOut starts the result of a COPY ... TO STDOUT instead of
	// Columns: CopyOutResponse, and the header line when format asks for
	// one. Each Row after it is one CopyData line in format (valid, see
	// pgcodec.CopyFormat.Validate), and Complete sends CopyDone before
	// CommandComplete ("COPY n"). An error returned instead of Complete
	// ends the copy as Postgres does, with the ErrorResponse alone.
	CopyOut(cols []catalog.Column, format *pgcodec.CopyFormat) error
	// Flush sends what is buffered to the client now. A statement that
	// produces rows over a long time (a COPY of a live source) calls it
	// after each batch; otherwise rows go out 64 KiB at a time and at
	// the statement's end.
	Flush() error
}

// PreparedStatement is a statement parsed by Session.Prepare. pgwire
// uses it from the connection's goroutine only.
type PreparedStatement interface {
	// ParamTypes returns the type of each parameter $1..$n: the one the
	// client declared, else the one the plan inferred, else Varchar
	// (text). It has at least as many entries as Prepare was given
	// paramTypes.
	ParamTypes() []catalog.Type
	// Columns returns the columns of the rows the statement returns, nil
	// for a statement that returns none. They are known before it runs
	// (Describe) and every execution reports exactly these.
	Columns() []catalog.Column
	// Bind makes a portal: the statement with its parameter values, one
	// per ParamTypes entry, each nil (NULL) or the Go value of a
	// catalog.Type (see there). The values are not necessarily of the
	// parameter's type: a client may declare int4 where the plan wanted
	// int8; the engine converts. ctx is the connection's: it ends when
	// the connection does, and bounds anything the portal keeps running
	// between executions.
	Bind(ctx context.Context, params []any) (Portal, error)
	// Close releases the statement. Portals bound from it are closed
	// separately, before it.
	Close()
}

// Portal is a bound statement, ready to run (and, when a row limit cut
// it short, to resume).
type Portal interface {
	// Execute runs the portal, or resumes it where the last Execute
	// stopped, reporting to w: rows, then Complete with the tag (its
	// count is the rows this call sent, as in Postgres), or Empty for an
	// empty statement. w.Columns may be called; it must match
	// PreparedStatement.Columns and is not sent (Describe sends
	// RowDescription in the extended protocol). maxRows > 0 stops after
	// that many rows without Complete and reports suspended; 0 means no
	// limit. An error leaves the portal unusable. ctx is the statement's,
	// as for Session.Query.
	Execute(ctx context.Context, w ResultWriter, maxRows int) (suspended bool, err error)
	// Close releases the portal and stops anything it keeps running; it
	// returns when that has stopped.
	Close()
}
