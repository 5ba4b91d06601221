package pgwire

import (
	"context"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
)

// The extended query protocol: what its messages share. Each message
// kind has its own file (parse.go, bind.go, describe.go, execute.go,
// close.go); this one holds the connection's statements and portals,
// error recovery and Sync.
//
// Statements and portals live on conn, by name; "" is the unnamed one
// of each. The engine's PreparedStatement and Portal do the work; conn
// keeps what the protocol needs around them: the parameter types as
// ParameterDescription reports them (which Bind decodes by), the result
// columns (Describe answers without asking the engine) and a portal's
// result formats.

// statement is a prepared statement of the connection.
type statement struct {
	name string
	ps   PreparedStatement
	// paramOIDs are the parameter types ParameterDescription reports and
	// Bind decodes by: the client's where it declared one (int4, varchar,
	// ...), else the engine's.
	paramOIDs []uint32
	// cols are the result columns; nil when the statement returns no
	// rows.
	cols []catalog.Column
	// portals are the open portals bound from it: closing a statement
	// closes them, as in Postgres.
	portals map[*portal]struct{}
}

// portal is a bound statement of the connection.
type portal struct {
	name string
	p    Portal
	stmt *statement
	cols []catalog.Column
	// formats holds the format code of each column, from Bind.
	formats []int16
}

// extendedError reports err, an error of an extended-protocol message,
// and starts skipping to Sync, as Postgres does. The error is flushed at
// once: a client may wait for it (after Flush) before it sends Sync.
// cause is the cancel cause of the statement's context, if one ran.
func (c *conn) extendedError(err, cause error) error {
	c.ignoreTillSync = true
	if err := c.w.send(errorResponse(c.wireError(err, cause))); err != nil {
		return err
	}
	return c.w.flush()
}

// callEngine runs f, a call into the Session that may take a while, with
// a statement context as handleQuery does: a CancelRequest cancels it
// (cause errCancelRequested), as does the connection ending. A panic in
// f becomes its error. It returns f's error and the context's cancel
// cause; end is set when the connection must end instead (the socket
// failed, or the connection's context ended).
func (c *conn) callEngine(f func(ctx context.Context) error) (err, cause, end error) {
	ctx, cancel := c.statementContext()
	defer cancel(nil)
	c.peer.start()
	err = callSafely(func() error { return f(ctx) })
	c.peer.stop()
	c.setCancel(nil)
	cause = context.Cause(ctx)
	if c.w.err != nil {
		return nil, nil, c.w.err
	}
	if c.ctx.Err() != nil {
		return nil, nil, context.Cause(c.ctx)
	}
	return err, cause, nil
}

// closeStatement closes st and the portals bound from it.
func (c *conn) closeStatement(st *statement) {
	for p := range st.portals {
		c.closePortal(p)
	}
	if c.stmts[st.name] == st {
		delete(c.stmts, st.name)
	}
	if err := callSafely(func() error { st.ps.Close(); return nil }); err != nil {
		c.internalError(err)
	}
}

// closePortal closes p. The engine stops whatever p keeps running first.
func (c *conn) closePortal(p *portal) {
	delete(p.stmt.portals, p)
	if c.portals[p.name] == p {
		delete(c.portals, p.name)
	}
	if err := callSafely(func() error { p.p.Close(); return nil }); err != nil {
		c.internalError(err)
	}
}

// closeUnnamed closes the unnamed statement and portal; a simple Query
// does, as in Postgres.
func (c *conn) closeUnnamed() {
	if p, ok := c.portals[""]; ok {
		c.closePortal(p)
	}
	if st, ok := c.stmts[""]; ok {
		c.closeStatement(st)
	}
}

// closeExtended closes every portal and statement; the connection is
// ending.
func (c *conn) closeExtended() {
	for _, p := range c.portals {
		c.closePortal(p)
	}
	for _, st := range c.stmts {
		c.closeStatement(st)
	}
}

// allText is the format codes of up to 64 values all in text; nothing
// writes to it.
var allText [64]int16

// expandFormats turns Bind's format codes into one per value: none means
// all text, one applies to all, else there must be one per value (ok is
// false otherwise). The result must not be modified: all-text results
// share one array.
func expandFormats(codes []int16, n int) ([]int16, bool) {
	if n <= len(allText) && (len(codes) == 0 || len(codes) == 1 && codes[0] == pgcodec.FormatText) {
		return allText[:n:n], true
	}
	out := make([]int16, n)
	switch len(codes) {
	case 0:
	case 1:
		for i := range out {
			out[i] = codes[0]
		}
	case n:
		copy(out, codes)
	default:
		return nil, false
	}
	return out, true
}

// checkFormats returns the 22023 for a format code other than text and
// binary.
func checkFormats(codes []int16) error {
	for _, f := range codes {
		if f != pgcodec.FormatText && f != pgcodec.FormatBinary {
			return pgerr.New(pgerr.InvalidParameterValue, "unsupported format code: %d", f)
		}
	}
	return nil
}

// handleSync ends an extended-protocol pipeline, and error recovery in
// it, with the parameters its statements changed and ReadyForQuery.
// Outside a transaction block, Sync ends the portals (sendReady).
func (c *conn) handleSync() error {
	c.ignoreTillSync = false
	if err := c.reportParameters(); err != nil {
		return err
	}
	return c.sendReady()
}
