package pgwire

import (
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/jackc/pgx/v5/pgproto3"
)

// handleBind creates a portal from a prepared statement and parameter
// values. Values are decoded here, each by its parameter's type
// (statement.paramOIDs) in the format the client gave it, so malformed
// values fail at Bind as in Postgres; the engine gets Go values. The
// result format codes are kept for Describe and Execute. BindComplete
// answers.
//
// A named portal must not exist yet (42P03); the unnamed one is
// replaced.
func (c *conn) handleBind(m *pgproto3.Bind) error {
	if m.DestinationPortal == "" {
		if old, ok := c.portals[""]; ok {
			c.closePortal(old)
		}
	} else if _, ok := c.portals[m.DestinationPortal]; ok {
		return c.extendedError(pgerr.New(pgerr.DuplicateCursor, "portal %q already exists", m.DestinationPortal), nil)
	}
	st, ok := c.stmts[m.PreparedStatement]
	if !ok {
		return c.extendedError(pgerr.New(pgerr.InvalidSQLStatementName, "prepared statement %q does not exist", m.PreparedStatement), nil)
	}
	n := len(st.paramOIDs)
	if len(m.Parameters) != n {
		return c.extendedError(pgerr.New(pgerr.ProtocolViolation, "bind message supplies %d parameters, but prepared statement %q requires %d",
			len(m.Parameters), m.PreparedStatement, n), nil)
	}
	paramFormats, ok := expandFormats(m.ParameterFormatCodes, n)
	if !ok {
		return c.extendedError(pgerr.New(pgerr.ProtocolViolation, "bind message has %d parameter formats but %d parameters",
			len(m.ParameterFormatCodes), n), nil)
	}
	if err := checkFormats(m.ParameterFormatCodes); err != nil {
		return c.extendedError(err, nil)
	}
	resultFormats, ok := expandFormats(m.ResultFormatCodes, len(st.cols))
	if !ok {
		return c.extendedError(pgerr.New(pgerr.ProtocolViolation, "bind message has %d result formats but query has %d columns",
			len(m.ResultFormatCodes), len(st.cols)), nil)
	}
	if err := checkFormats(m.ResultFormatCodes); err != nil {
		return c.extendedError(err, nil)
	}
	params := make([]any, n)
	for i, b := range m.Parameters {
		var v any
		var err error
		if pgcodec.ZoneParam(st.paramOIDs[i], paramFormats[i]) {
			v, err = pgcodec.DecodeParamIn(i+1, st.paramOIDs[i], paramFormats[i], b, c.sessionZone())
		} else {
			v, err = pgcodec.DecodeParam(i+1, st.paramOIDs[i], paramFormats[i], b)
		}
		if err != nil {
			return c.extendedError(err, nil)
		}
		params[i] = v
	}

	// The portal lives as long as the connection at most: c.ctx, not a
	// statement context, bounds what it keeps running between Executes.
	var p Portal
	err := callSafely(func() error {
		var err error
		p, err = st.ps.Bind(c.ctx, params)
		return err
	})
	if err != nil {
		return c.extendedError(err, nil)
	}
	pt := &portal{name: m.DestinationPortal, p: p, stmt: st, cols: st.cols, formats: resultFormats}
	st.portals[pt] = struct{}{}
	if c.portals == nil {
		c.portals = make(map[string]*portal)
	}
	c.portals[pt.name] = pt
	return c.w.send(&pgproto3.BindComplete{})
}
