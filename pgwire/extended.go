package pgwire

import (
	"github.com/jackc/pgx/v5/pgproto3"
)

// The extended query protocol (Parse, Bind, Describe, Execute, Close,
// Sync, Flush) is the next milestone. Its messages already arrive here,
// owned (see ownMessage), through dispatch; for now each of Parse, Bind,
// Describe, Execute and Close is refused with 0A000 and, exactly as after
// any error in extended mode, everything up to the next Sync is skipped,
// so a client's pipeline ends in ReadyForQuery and the connection stays
// usable. When the protocol lands, each message gets its own file
// (parse.go, bind.go, ...) with prepared statements and portals on conn.

// handleExtended answers an extended-protocol message other than Sync
// and Flush. The error is flushed at once, as Postgres does: a client
// may wait for it (after Flush) before it sends Sync.
func (c *conn) handleExtended(pgproto3.FrontendMessage) error {
	c.ignoreTillSync = true
	if err := c.w.send(errorResponse(errExtendedUnsupported)); err != nil {
		return err
	}
	return c.w.flush()
}

// handleSync ends an extended-protocol pipeline, and error recovery in
// it, with ReadyForQuery.
func (c *conn) handleSync() error {
	c.ignoreTillSync = false
	return c.sendReady()
}
