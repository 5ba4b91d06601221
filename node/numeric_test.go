package node

import (
	"math/big"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestNumericParams sends numeric parameters the ways drivers do (pgx's
// numeric in binary, a string in text, a float) in every extended-query
// mode, and reads numerics back exactly, scale kept.
func TestNumericParams(t *testing.T) {
	n := startNode(t, t.TempDir())
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			conn := connectMode(t, n.PGAddr(), mode)
			ctx := extCtx(t)
			for _, c := range []struct {
				q    string
				arg  any
				want string
			}{
				{`SELECT $1::numeric * 2`, pgtype.Numeric{Int: big.NewInt(125), Exp: -2, Valid: true}, "2.50"},
				{`SELECT $1::numeric(10,1)`, "3.14159", "3.1"},
				{`SELECT $1::numeric + 0.10`, "1.5", "1.60"},
				{`SELECT 1::numeric / $1::numeric`, "3", "0.33333333333333333333"},
				{`SELECT $1::numeric`, "12345678901234567890.000000000001", "12345678901234567890.000000000001"},
			} {
				var got pgtype.Numeric
				if err := conn.QueryRow(ctx, c.q, c.arg).Scan(&got); err != nil {
					t.Errorf("%s with %v: %v", c.q, c.arg, err)
					continue
				}
				if s := formatTestValue(got); s != c.want {
					t.Errorf("%s with %v = %s, want %s", c.q, c.arg, s, c.want)
				}
			}
			var typ string
			if err := conn.QueryRow(ctx, `SELECT pg_typeof($1::numeric + 1)::text`, "2").Scan(&typ); err != nil || typ != "numeric" {
				t.Errorf("pg_typeof = %q, %v", typ, err)
			}
		})
	}
}
