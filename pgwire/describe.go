package pgwire

import (
	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/jackc/pgx/v5/pgproto3"
)

// handleDescribe answers Describe from what Parse and Bind kept, without
// calling the engine. A statement gets ParameterDescription, then
// RowDescription with every format text (formats are not chosen until
// Bind), or NoData; a portal gets RowDescription with its result formats,
// or NoData.
func (c *conn) handleDescribe(m *pgproto3.Describe) error {
	switch m.ObjectType {
	case 'S':
		st, ok := c.stmts[m.Name]
		if !ok {
			return c.extendedError(pgerr.New(pgerr.InvalidSQLStatementName, "prepared statement %q does not exist", m.Name), nil)
		}
		if err := c.w.send(&pgproto3.ParameterDescription{ParameterOIDs: st.paramOIDs}); err != nil {
			return err
		}
		return c.sendRowDescription(st.cols, nil)
	case 'P':
		p, ok := c.portals[m.Name]
		if !ok {
			return c.extendedError(errNoPortal(m.Name), nil)
		}
		return c.sendRowDescription(p.cols, p.formats)
	}
	return c.extendedError(pgerr.New(pgerr.ProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType), nil)
}

// sendRowDescription describes result columns, or sends NoData for a
// statement that returns no rows.
func (c *conn) sendRowDescription(cols []catalog.Column, formats []int16) error {
	if cols == nil {
		return c.w.send(&pgproto3.NoData{})
	}
	rd, err := c.rw.rowDescription(cols, formats)
	if err != nil {
		return c.extendedError(err, nil)
	}
	return c.w.send(rd)
}
