package pgwire

import (
	"context"
	"errors"
	"math"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/internal/safe"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Severities of ErrorResponse and NoticeResponse.
const (
	severityError  = "ERROR"
	severityFatal  = "FATAL"
	severityNotice = "NOTICE"
)

var (
	// errCancelRequested is the cancel cause of a statement's context
	// when a CancelRequest with its connection's key arrived.
	errCancelRequested = errors.New("pgwire: statement cancelled by CancelRequest")
	// errClientGone is the cancel cause of a connection's context when
	// reading from the client failed: the client closed the socket or
	// the network dropped.
	errClientGone = errors.New("pgwire: client connection lost")
	// errConnDone is the cancel cause of a connection's context when the
	// connection ends for any other reason (Terminate, protocol error).
	errConnDone = errors.New("pgwire: connection ended")
	// errTerminated is the cancel cause of a connection's context when
	// Server.TerminateBackend ends it.
	errTerminated = errors.New("pgwire: connection terminated by pg_terminate_backend")
)

// Errors the server raises itself, with Postgres's messages.
var (
	errQueryCanceled = &pgerr.Error{
		Code:    pgerr.QueryCanceled,
		Message: "canceling statement due to user request",
	}
	errTooManyClients = &pgerr.Error{
		Code:     pgerr.TooManyConnections,
		Message:  "sorry, too many clients already",
		Severity: severityFatal,
	}
	errShuttingDown = &pgerr.Error{
		Code:     pgerr.CannotConnectNow,
		Message:  "the database system is shutting down",
		Severity: severityFatal,
	}
	errAdminShutdown = &pgerr.Error{
		Code:     pgerr.AdminShutdown,
		Message:  "terminating connection due to administrator command",
		Severity: severityFatal,
	}
	errFunctionCallUnsupported = &pgerr.Error{
		Code:    pgerr.FeatureNotSupported,
		Message: "fast-path function calls are not supported",
	}
)

// callSafely runs f and turns a panic in it into a *safe.PanicError, so
// that a bug in the engine fails one statement instead of the process.
func callSafely(f func() error) error { return safe.Call(f) }

// wireError turns what Session.Query returned into the error the client
// sees. cause is the cancel cause of the statement's context.
//
//   - A statement cancelled by CancelRequest ends with 57014, whether the
//     session reported the context's error or its own 57014.
//   - An error carrying a SQLSTATE is sent as it is.
//   - A write that failed for lack of space (ENOSPC) is 53100 naming
//     the file (pgerr.FromDiskFull).
//   - Anything else is a bug: XX000 "internal error: ..." to the client,
//     and the error with a stack to the log.
func (c *conn) wireError(err, cause error) *pgerr.Error {
	if errors.Is(cause, errCancelRequested) &&
		(errors.Is(err, context.Canceled) || pgerr.CodeOf(err) == pgerr.QueryCanceled) {
		return errQueryCanceled
	}
	if pe, ok := pgerr.As(err); ok {
		return pe
	}
	// A write that failed for lack of space is the operator's to fix,
	// not a bug: 53100 naming the file, not XX000.
	if pe, ok := pgerr.FromDiskFull(err, "the data directory"); ok {
		c.log.Error("pgwire: statement failed: disk full", "err", err)
		return pe
	}
	return c.internalError(err)
}

// internalError logs err with a stack and returns the XX000 the client
// sees. The stack of a panic (a *safe.PanicError, from the Backend or
// from a goroutine of the engine's) is where it panicked, not where we
// noticed.
func (c *conn) internalError(err error) *pgerr.Error {
	safe.Log(c.log, "pgwire: internal error", err)
	return &pgerr.Error{Code: pgerr.InternalError, Message: "internal error: " + err.Error()}
}

// errorResponse encodes e. Severity defaults to ERROR.
func errorResponse(e *pgerr.Error) *pgproto3.ErrorResponse {
	sev := e.Severity
	if sev == "" {
		sev = severityError
	}
	code := e.Code
	if code == "" {
		code = pgerr.InternalError
	}
	return &pgproto3.ErrorResponse{
		Severity:            sev,
		SeverityUnlocalized: sev,
		Code:                string(code),
		Message:             cstring(e.Message),
		Detail:              cstring(e.Detail),
		Hint:                cstring(e.Hint),
		Position:            position32(e.Position),
	}
}

// noticeResponse encodes n. Severity defaults to NOTICE and the code to
// 00000.
func noticeResponse(n *pgerr.Error) *pgproto3.NoticeResponse {
	sev := n.Severity
	if sev == "" {
		sev = severityNotice
	}
	code := n.Code
	if code == "" {
		code = pgerr.SuccessfulCompletion
	}
	return &pgproto3.NoticeResponse{
		Severity:            sev,
		SeverityUnlocalized: sev,
		Code:                string(code),
		Message:             cstring(n.Message),
		Detail:              cstring(n.Detail),
		Hint:                cstring(n.Hint),
		Position:            position32(n.Position),
	}
}

// position32 returns p for the wire's int32 Position field; a position
// that does not fit is dropped (0 = unknown) rather than wrapped.
func position32(p int) int32 {
	if p < 0 || p > math.MaxInt32 {
		return 0
	}
	return int32(p)
}
