package pgwire

import (
	"github.com/basindb/basin/internal/pgerr"
	"github.com/jackc/pgx/v5/pgproto3"
)

// handleClose closes a prepared statement (and the portals bound from
// it) or a portal. Closing one that does not exist is not an error, as
// in Postgres; CloseComplete answers either way.
func (c *conn) handleClose(m *pgproto3.Close) error {
	switch m.ObjectType {
	case 'S':
		if st, ok := c.stmts[m.Name]; ok {
			c.closeStatement(st)
		}
	case 'P':
		if p, ok := c.portals[m.Name]; ok {
			c.closePortal(p)
		}
	default:
		return c.extendedError(pgerr.New(pgerr.ProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType), nil)
	}
	return c.w.send(&pgproto3.CloseComplete{})
}

// errNoPortal is the error for a portal name that is not open.
func errNoPortal(name string) *pgerr.Error {
	return pgerr.New(pgerr.InvalidCursorName, "portal %q does not exist", name)
}
