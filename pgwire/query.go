package pgwire

import (
	"context"
)

// handleQuery runs a simple-protocol Query message. The whole text goes to
// Session.Query, which reports each statement's result through the
// resultWriter as it goes; then come the error, if any, the parameters
// the statements changed, and ReadyForQuery.
//
// The statement's context ends with the connection's (statementContext),
// and is cancelled by a CancelRequest with this connection's key (cause
// errCancelRequested), by Close and by the client going away. A returned error means the
// connection must end: the socket failed or the connection's context did.
func (c *conn) handleQuery(text string) error {
	// As in Postgres, a simple query replaces the unnamed statement and
	// portal.
	c.closeUnnamed()
	ctx, cancel := c.statementContext()
	defer cancel(nil)
	c.rw.reset()
	c.peer.start()
	err := callSafely(func() error { return c.sess.Query(ctx, text, &c.rw) })
	c.peer.stop()
	c.setCancel(nil)
	cause := context.Cause(ctx)

	if c.w.err != nil {
		return c.w.err
	}
	if c.ctx.Err() != nil {
		// Shutdown or a dead client: whatever the statement said, the
		// connection is over (run sends 57P01 on shutdown).
		return context.Cause(c.ctx)
	}
	if err != nil {
		if err := c.w.send(errorResponse(c.wireError(err, cause))); err != nil {
			return err
		}
	}
	if err := c.reportParameters(); err != nil {
		return err
	}
	return c.sendReady()
}
