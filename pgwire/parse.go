package pgwire

import (
	"context"
	"math"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/jackc/pgx/v5/pgproto3"
)

// handleParse creates a prepared statement: Session.Prepare parses and
// plans the text, and the statement keeps the parameter types and result
// columns that Describe reports and Bind relies on. ParseComplete
// answers.
//
// A named statement must not exist yet (42P05); the unnamed one is
// replaced, and dropped even if the new text fails, as in Postgres.
// Parameter types the client declares are kept as declared, so Bind
// decodes values by the client's types (int4, varchar, ...) and the
// engine converts them to what its plan wants.
func (c *conn) handleParse(m *pgproto3.Parse) error {
	if m.Name != "" {
		if _, ok := c.stmts[m.Name]; ok {
			return c.extendedError(pgerr.New(pgerr.DuplicatePreparedStatement, "prepared statement %q already exists", m.Name), nil)
		}
	} else if old, ok := c.stmts[""]; ok {
		c.closeStatement(old)
	}
	declared := make([]catalog.Type, len(m.ParameterOIDs))
	for i, oid := range m.ParameterOIDs {
		t, ok := pgcodec.ParamType(oid)
		if !ok {
			return c.extendedError(pgerr.New(pgerr.FeatureNotSupported, "parameter $%d has type OID %d, which basin does not support", i+1, oid).
				WithHint("Leave the type unspecified (0) for basin to infer it, or declare bool, int2, int4, int8, float4, float8, numeric, text, varchar, date, timestamp, timestamptz, uuid, json, jsonb or bytea."), nil)
		}
		declared[i] = t
	}

	var ps PreparedStatement
	err, cause, end := c.callEngine(func(ctx context.Context) error {
		var err error
		ps, err = c.sess.Prepare(ctx, m.Query, declared)
		return err
	})
	if end != nil {
		if ps != nil {
			_ = callSafely(func() error { ps.Close(); return nil })
		}
		return end
	}
	if err != nil {
		return c.extendedError(err, cause)
	}

	types := ps.ParamTypes()
	n := max(len(types), len(declared))
	cols := ps.Columns()
	if n > math.MaxUint16 || len(cols) > maxColumns {
		_ = callSafely(func() error { ps.Close(); return nil })
		return c.extendedError(pgerr.New(pgerr.ProgramLimitExceeded,
			"a prepared statement may have at most %d parameters and %d result columns, this one has %d and %d",
			math.MaxUint16, maxColumns, n, len(cols)), nil)
	}
	oids := make([]uint32, n)
	for i := range oids {
		switch {
		case i < len(declared) && declared[i] != catalog.Unknown:
			oids[i] = m.ParameterOIDs[i]
		case i < len(types) && types[i] != catalog.Unknown:
			oids[i] = types[i].OID()
		default:
			oids[i] = pgcodec.OIDText
		}
	}
	if c.stmts == nil {
		c.stmts = make(map[string]*statement)
	}
	c.stmts[m.Name] = &statement{name: m.Name, ps: ps, paramOIDs: oids, cols: cols, portals: map[*portal]struct{}{}}
	return c.w.send(&pgproto3.ParseComplete{})
}
