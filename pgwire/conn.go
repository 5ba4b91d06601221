package pgwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"sync"
	"time"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/internal/safe"
	"github.com/jackc/pgx/v5/pgproto3"
)

// goodbyeGrace bounds how long a connection may spend writing after its
// context ended (server shutdown): long enough to deliver FATAL 57P01 to a
// client that is reading, short enough that Close is not held hostage by
// one that is not.
const goodbyeGrace = time.Second

// conn is one client connection. serve runs it on the goroutine the
// server started for it, which reads every message and writes every
// answer; while a statement runs long, a second goroutine watches the
// socket for the client going away (see run and peerWatch).
type conn struct {
	srv *Server
	log *slog.Logger
	// raw is the accepted socket, where deadlines are set; nc is raw or
	// the TLS connection over it.
	raw net.Conn
	nc  net.Conn

	// startupHost is the remote IP address the server counts the
	// connection under while inStartup (Server.goServe); endStartup
	// clears inStartup. Both belong to the connection's goroutine.
	startupHost string
	inStartup   bool

	// pid and secret are the BackendKeyData; pid is 0 until register.
	pid    uint32
	secret [4]byte

	// ctx ends the connection: Close (cause ErrServerClosed),
	// TerminateBackend (errTerminated), a dead socket (errClientGone)
	// or serve returning (errConnDone). Every
	// statement's context ends with it (statementContext).
	ctx    context.Context
	cancel context.CancelCauseFunc
	// stmtParent is ctx's values without its cancellation: statements'
	// contexts derive from it so that making one does not register a
	// child with ctx (a lock and a map entry per statement); ctx's end
	// cancels the running statement instead (statementContext).
	stmtParent context.Context

	// The fields below belong to the connection's goroutine (serve).
	be   *pgproto3.Backend
	rd   *ioErrReader
	peer peerWatch
	w    writer
	rw   resultWriter
	sess Session
	// reported is the ParameterStatus last sent for each name; lastStatus
	// is the map the session's ParameterStatus last returned.
	reported   map[string]string
	lastStatus map[string]string
	// stmts and portals are the prepared statements and portals of the
	// extended protocol, by name (extended.go).
	stmts   map[string]*statement
	portals map[string]*portal
	// ignoreTillSync is set after an error in an extended-protocol
	// message: everything up to the next Sync is discarded, as Postgres
	// does, so the client's pipeline resynchronizes at Sync.
	ignoreTillSync bool
	// linger asks for a lingering close (see lingerClose) after a
	// protocol violation was reported.
	linger bool
	// readyIdle is set from a ReadyForQuery 'I' to the next message:
	// while it is, the connection is idle for notify (notify.go).
	readyIdle bool

	// notify delivers the session's notifications while the connection
	// is idle; it is safe for any goroutine.
	notify notifier

	mu struct {
		sync.Mutex
		// cancelStatement cancels the running statement's context; nil
		// between statements, so a late CancelRequest cancels nothing.
		cancelStatement context.CancelCauseFunc
	}
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv: s,
		raw: nc,
		nc:  nc,
		log: s.log.With("remote", nc.RemoteAddr().String()),
	}
	c.ctx, c.cancel = context.WithCancelCause(s.ctx)
	c.stmtParent = context.WithoutCancel(c.ctx)
	c.w.w = nc
	c.rw.w = &c.w
	c.rw.c = c
	c.notify.c = c
	return c
}

// serve runs the connection from accept to close.
func (c *conn) serve() {
	// When ctx ends, unblock the reads and bound the writes. Whoever
	// sets deadlines later (startup) re-checks ctx afterwards, so this
	// cannot be overtaken.
	stop := context.AfterFunc(c.ctx, func() {
		c.cancelStatement(context.Cause(c.ctx))
		c.expireDeadlines()
	})
	defer func() {
		stop()
		c.endStartup()
		c.cancel(errConnDone)
		c.notify.close()
		// Portals first: they may keep work running for the session.
		c.closeExtended()
		if c.sess != nil {
			if err := callSafely(func() error { c.sess.Close(); return nil }); err != nil {
				c.internalError(err)
			}
		}
		if c.pid != 0 {
			c.srv.unregister(c)
		}
		_ = c.nc.Close()
		c.log.Debug("pgwire: connection closed")
	}()
	// A panic in pgwire's own handling of the connection (the Backend's
	// calls are recovered one by one, callSafely) ends this connection,
	// not the process: the stream may be mid-message, so the client gets
	// FATAL XX000 and the socket closes.
	var panicked error
	defer func() {
		if panicked != nil {
			c.connPanicked(panicked)
		}
	}()
	defer safe.Recover(&panicked)

	ok := c.startup()
	c.endStartup()
	if !ok {
		return
	}
	c.run()
}

// endStartup stops counting c against the startup limits, once.
func (c *conn) endStartup() {
	if c.inStartup {
		c.inStartup = false
		c.srv.endStartup(c.startupHost)
	}
}

// connPanicked logs the panic that ended the connection with its stack
// and tells the client, if the socket still takes it.
func (c *conn) connPanicked(err error) {
	safe.Log(c.log, "pgwire: panic serving the connection; closing it", err)
	c.notify.close() // the writer must be the connection's again
	_ = safe.Call(func() error {
		c.fatal(&pgerr.Error{Code: pgerr.InternalError, Message: "internal error: " + err.Error()})
		return nil
	})
}

func (c *conn) expireDeadlines() {
	now := time.Now()
	_ = c.raw.SetReadDeadline(now)
	_ = c.raw.SetWriteDeadline(now.Add(goodbyeGrace))
}

// run is the command loop: it reads a message, handles it, and reads
// the next. While a statement runs past watchAfter, peerWatch watches the
// socket, so that a client that hangs up cancels the statement at once
// rather than when it next writes; the messages a client sends meanwhile
// (pipelining) wait in the socket.
func (c *conn) run() {
	c.rd = &ioErrReader{r: c.nc}
	c.be = pgproto3.NewBackend(c.rd, c.nc)
	c.be.SetMaxBodyLen(c.srv.opts.MaxMessageSize)
	c.peer.init(c)
	defer func() {
		if c.linger {
			c.lingerClose()
		}
	}()
	for c.ctx.Err() == nil {
		if c.readyIdle {
			c.notify.idle()
		}
		msg, err := c.be.Receive()
		if err != nil {
			if c.rd.err != nil {
				// The socket failed (EOF, reset, our own deadline): there
				// is no client left to answer.
				c.cancel(errClientGone)
				break
			}
			c.notify.busy()
			// The bytes were malformed: the stream cannot be trusted past
			// this point.
			c.protocolViolation(err)
			break
		}
		c.notify.busy()
		c.readyIdle = false
		if !c.dispatch(ownMessage(msg)) {
			break
		}
	}
	// From here on the writer is the connection's alone.
	c.notify.close()
	if cause := context.Cause(c.ctx); errors.Is(cause, ErrServerClosed) || errors.Is(cause, errTerminated) {
		c.fatal(errAdminShutdown)
	}
}

// dispatch handles one frontend message; it reports false when the
// connection must end. Each message kind has its handler in the file
// named for it (query.go, parse.go, bind.go, ...; extended.go for Sync).
func (c *conn) dispatch(msg pgproto3.FrontendMessage) bool {
	safe.Fault(safe.FaultConn)
	if c.ignoreTillSync {
		switch msg.(type) {
		case *pgproto3.Sync, *pgproto3.Terminate:
		default:
			return true
		}
	}
	var err error
	switch m := msg.(type) {
	case *pgproto3.Query:
		err = c.handleQuery(m.String)
	case *pgproto3.Parse:
		err = c.handleParse(m)
	case *pgproto3.Bind:
		err = c.handleBind(m)
	case *pgproto3.Describe:
		err = c.handleDescribe(m)
	case *pgproto3.Execute:
		err = c.handleExecute(m)
	case *pgproto3.Close:
		err = c.handleClose(m)
	case *pgproto3.Sync:
		err = c.handleSync()
	case *pgproto3.Flush:
		err = c.w.flush()
	case *pgproto3.FunctionCall:
		err = c.sendErrorAndReady(errFunctionCallUnsupported)
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		// Outside COPY these are ignored, as in Postgres: they are what a
		// client still sends after a COPY failed on the server side.
	case *pgproto3.Terminate:
		c.log.Debug("pgwire: client terminated")
		return false
	default:
		c.protocolViolation(fmt.Errorf("unexpected %s after startup", reflect.TypeOf(msg).Elem().Name()))
		return false
	}
	if err != nil {
		c.log.Debug("pgwire: connection ending", "err", err)
		return false
	}
	return true
}

// ioErrReader records the first error of the socket, so the reader can
// tell a dead socket from malformed bytes: pgproto3 returns both from
// Receive.
type ioErrReader struct {
	r   io.Reader
	err error
}

func (r *ioErrReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// ownMessage returns msg in memory the caller owns. pgproto3.Backend
// decodes into one value per message kind, reused by the next Receive,
// and some fields alias its read buffer; handlers keep parts of messages
// (a Bind's format codes in its portal), so they get copies. Strings are
// already copies; byte slices are not.
func ownMessage(msg pgproto3.FrontendMessage) pgproto3.FrontendMessage {
	switch m := msg.(type) {
	case *pgproto3.Query:
		c := *m
		return &c
	case *pgproto3.Parse:
		c := *m
		return &c
	case *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute:
		// Their handlers keep nothing of them: handleBind decodes the
		// parameters into values of their own (pgcodec.DecodeParam never aliases
		// its bytes) and copies the format codes it keeps.
		return msg
	case *pgproto3.Close:
		c := *m
		return &c
	case *pgproto3.Sync:
		return &pgproto3.Sync{}
	case *pgproto3.Flush:
		return &pgproto3.Flush{}
	case *pgproto3.Terminate:
		return &pgproto3.Terminate{}
	case *pgproto3.CopyData:
		return &pgproto3.CopyData{Data: append([]byte{}, m.Data...)}
	case *pgproto3.CopyDone:
		return &pgproto3.CopyDone{}
	case *pgproto3.CopyFail:
		c := *m
		return &c
	case *pgproto3.FunctionCall:
		c := *m
		c.Arguments = make([][]byte, len(m.Arguments))
		for i, a := range m.Arguments {
			if a != nil {
				c.Arguments[i] = append([]byte{}, a...)
			}
		}
		return &c
	}
	// Authentication responses after startup: only their kind is looked
	// at, to reject them.
	return msg
}

// sendErrorAndReady answers a message with an error and ReadyForQuery.
func (c *conn) sendErrorAndReady(e *pgerr.Error) error {
	if err := c.w.send(errorResponse(e)); err != nil {
		return err
	}
	return c.sendReady()
}

// sendReady sends ReadyForQuery and flushes: the client waits for it.
//
// Outside a transaction block every portal is closed first: in Postgres
// a portal ends with its transaction, and outside a block that is the
// statement (simple protocol) or the pipeline up to Sync (extended).
func (c *conn) sendReady() error {
	status := byte('I')
	if err := callSafely(func() error { status = c.sess.TxnStatus(); return nil }); err != nil {
		c.internalError(err)
	}
	if status == 'I' {
		for _, p := range c.portals {
			c.closePortal(p)
		}
		// What arrived while the statement ran, and what it committed,
		// goes out before ReadyForQuery, as in Postgres.
		if c.notify.takeWoken() {
			if err := c.sendNotifications(); err != nil {
				return err
			}
		}
	}
	if err := c.w.sendReadyForQuery(status); err != nil {
		return err
	}
	c.readyIdle = status == 'I'
	return c.w.flush()
}

// fatal sends a FATAL error, best effort: the connection is closing.
func (c *conn) fatal(e *pgerr.Error) {
	fe := *e
	fe.Severity = severityFatal
	if err := c.w.send(errorResponse(&fe)); err == nil {
		_ = c.w.flush()
	}
}

// protocolViolation reports malformed input: logged, answered with FATAL
// 08P01 if the socket still takes it, and the connection ends.
func (c *conn) protocolViolation(err error) {
	c.log.Warn("pgwire: protocol violation; closing connection", "err", err)
	msg := "invalid frontend message: " + err.Error()
	var tooBig *pgproto3.ExceededMaxBodyLenErr
	if errors.As(err, &tooBig) {
		msg = fmt.Sprintf("invalid message length %d: the limit is %d bytes", tooBig.ActualBodyLen, tooBig.MaxExpectedBodyLen)
	}
	c.fatal(&pgerr.Error{Code: pgerr.ProtocolViolation, Message: msg})
	c.linger = true
}

// lingerClose half-closes a plaintext TCP connection and discards what
// the client still sends, for at most goodbyeGrace and lingerLimit bytes.
// Closing a socket with unread input makes the kernel reset the
// connection, and a client that is still sending would then lose the
// FATAL error it was about to read; this is the lingering close HTTP
// servers do for the same reason.
func (c *conn) lingerClose() {
	tcp, ok := c.nc.(*net.TCPConn)
	if !ok {
		return
	}
	if err := tcp.CloseWrite(); err != nil {
		return
	}
	// This overrides the deadline ctx's end set; it is as short.
	_ = tcp.SetReadDeadline(time.Now().Add(goodbyeGrace))
	_, _ = io.Copy(io.Discard, io.LimitReader(tcp, lingerLimit))
}

// lingerLimit bounds what lingerClose reads: a client that sends more has
// stopped listening anyway.
const lingerLimit = 256 << 10

// cancelQuery cancels the running statement, if any. It is called by
// the goroutine serving a CancelRequest.
func (c *conn) cancelQuery() { c.cancelStatement(errCancelRequested) }

// cancelStatement cancels the running statement, if any, with cause.
func (c *conn) cancelStatement(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.cancelStatement != nil {
		c.mu.cancelStatement(cause)
	}
}

// statementContext makes the context of a statement about to run and
// installs its cancel function (setCancel(nil) uninstalls it). It ends
// when the connection's context does, with its cause, as a child of it
// would: the connection's end cancels the installed statement, and one
// installed after that is cancelled here.
func (c *conn) statementContext() (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(c.stmtParent)
	c.setCancel(cancel)
	if c.ctx.Err() != nil {
		cancel(context.Cause(c.ctx))
	}
	return ctx, cancel
}

// setCancel installs or, with nil, clears the running statement's cancel
// function.
func (c *conn) setCancel(cancel context.CancelCauseFunc) {
	c.mu.Lock()
	c.mu.cancelStatement = cancel
	c.mu.Unlock()
}
