package pgwire

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgproto3"
)

// handleExecute runs a portal, or resumes it. Rows go out in the
// portal's formats, without RowDescription (Describe's job); then
// CommandComplete, EmptyQueryResponse, or, when MaxRows stopped it,
// PortalSuspended, and a later Execute continues where this one stopped.
// Nothing is flushed here: the client's Sync or Flush, or the writer's
// threshold, decides.
//
// A portal that fails is closed, as Postgres ends the transaction that
// holds it; the client must Bind again.
func (c *conn) handleExecute(m *pgproto3.Execute) error {
	p, ok := c.portals[m.Portal]
	if !ok {
		return c.extendedError(errNoPortal(m.Portal), nil)
	}
	// MaxRows is an int32 on the wire; Postgres takes 0 and negative
	// values as no limit.
	maxRows := max(int(int32(m.MaxRows)), 0)
	c.rw.startPortal(p.cols, p.formats)
	var suspended bool
	err, cause, end := c.callEngine(func(ctx context.Context) error {
		var err error
		suspended, err = p.p.Execute(ctx, &c.rw, maxRows)
		return err
	})
	ended := c.rw.ended
	c.rw.reset()
	if end != nil {
		return end
	}
	if err == nil && !suspended && !ended {
		err = errors.New("pgwire: Portal.Execute returned without Complete, Empty or suspending")
	}
	if err != nil {
		c.closePortal(p)
		return c.extendedError(err, cause)
	}
	if suspended {
		return c.w.send(&pgproto3.PortalSuspended{})
	}
	return nil
}
