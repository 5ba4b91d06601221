package planner

import (
	"fmt"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
)

// Scalar is a bound expression: column references resolved to row
// indexes, types checked and known. exec evaluates Scalars.
type Scalar interface {
	Type() catalog.Type
	String() string
}

// ColRef reads column Idx of the input row.
type ColRef struct {
	Idx  int
	T    catalog.Type
	Name string
}

// Const is a constant value of type T (nil is NULL).
type Const struct {
	V any
	T catalog.Type
}

// ParamRef is the value of $N, coerced to T.
type ParamRef struct {
	N int
	T catalog.Type
}

// Unary is -X or NOT X.
type Unary struct {
	Op string
	X  Scalar
	T  catalog.Type
}

// Binary is an arithmetic, comparison, logical, concatenation or LIKE
// operator. For comparisons and arithmetic, L and R have been coerced to a
// common type (CmpType).
type Binary struct {
	Op   string
	L, R Scalar
	T    catalog.Type
}

// IsNull is X IS [NOT] NULL.
type IsNull struct {
	X   Scalar
	Not bool
}

// In is X [NOT] IN (List).
type In struct {
	X    Scalar
	List []Scalar
	Not  bool
}

// Cast converts X to T. Precision and Scale are a cast to
// NUMERIC(p,s)'s modifiers (Precision 0: none).
type Cast struct {
	X                Scalar
	T                catalog.Type
	Precision, Scale int
}

// CaseArm is one WHEN ... THEN ... of a Case.
type CaseArm struct {
	Cond, Result Scalar
}

// Case is a searched CASE (a simple CASE is rewritten to equality tests).
type Case struct {
	Arms []CaseArm
	Else Scalar // nil: NULL
	T    catalog.Type
}

// Call is a scalar function call.
type Call struct {
	Name string
	Args []Scalar
	T    catalog.Type
	// Fields name the fields of a record-valued call's result.
	Fields []catalog.Column
}

func (e *ColRef) Type() catalog.Type   { return e.T }
func (e *Const) Type() catalog.Type    { return e.T }
func (e *ParamRef) Type() catalog.Type { return e.T }
func (e *Unary) Type() catalog.Type    { return e.T }
func (e *Binary) Type() catalog.Type   { return e.T }
func (e *IsNull) Type() catalog.Type   { return catalog.Boolean }
func (e *In) Type() catalog.Type       { return catalog.Boolean }
func (e *Cast) Type() catalog.Type     { return e.T }
func (e *Case) Type() catalog.Type     { return e.T }
func (e *Call) Type() catalog.Type     { return e.T }

func (e *ColRef) String() string {
	if e.Name != "" {
		return e.Name
	}
	return fmt.Sprintf("$col%d", e.Idx)
}
func (e *Const) String() string {
	switch v := e.V.(type) {
	case nil:
		return "NULL"
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case time.Time:
		return "'" + FormatValue(v) + "'"
	case catalog.UUIDVal, catalog.JSONText, []byte:
		// As Postgres's EXPLAIN shows them: '{"a": 1}'::jsonb.
		return "'" + strings.ReplaceAll(FormatValue(v), "'", "''") + "'::" + e.T.SQLName()
	default:
		return FormatValue(v)
	}
}
func (e *ParamRef) String() string { return fmt.Sprintf("$%d", e.N) }
func (e *Unary) String() string    { return fmt.Sprintf("(%s %s)", e.Op, e.X) }
func (e *Binary) String() string   { return fmt.Sprintf("(%s %s %s)", e.L, e.Op, e.R) }
func (e *IsNull) String() string {
	if e.Not {
		return fmt.Sprintf("(%s IS NOT NULL)", e.X)
	}
	return fmt.Sprintf("(%s IS NULL)", e.X)
}
func (e *In) String() string {
	parts := make([]string, len(e.List))
	for i, x := range e.List {
		parts[i] = x.String()
	}
	not := ""
	if e.Not {
		not = "NOT "
	}
	return fmt.Sprintf("(%s %sIN (%s))", e.X, not, strings.Join(parts, ", "))
}
func (e *Cast) String() string {
	return fmt.Sprintf("CAST(%s AS %s%s)", e.X, e.T, catalog.TypeModifiers(e.T, e.Precision, e.Scale))
}
func (e *Case) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	for _, a := range e.Arms {
		fmt.Fprintf(&b, " WHEN %s THEN %s", a.Cond, a.Result)
	}
	if e.Else != nil {
		fmt.Fprintf(&b, " ELSE %s", e.Else)
	}
	b.WriteString(" END")
	return b.String()
}
func (e *Call) String() string {
	parts := make([]string, len(e.Args))
	for i, x := range e.Args {
		parts[i] = x.String()
	}
	return fmt.Sprintf("%s(%s)", e.Name, strings.Join(parts, ", "))
}

// Equal reports whether two bound expressions are the same expression.
func Equal(a, b Scalar) bool { return a.String() == b.String() && a.Type() == b.Type() }

// Walk calls fn for s and every scalar under it; nil scalars are skipped.
func Walk(s Scalar, fn func(Scalar)) {
	if s == nil {
		return
	}
	fn(s)
	switch s := s.(type) {
	case *Unary:
		Walk(s.X, fn)
	case *Binary:
		Walk(s.L, fn)
		Walk(s.R, fn)
	case *IsNull:
		Walk(s.X, fn)
	case *In:
		Walk(s.X, fn)
		for _, x := range s.List {
			Walk(x, fn)
		}
	case *Cast:
		Walk(s.X, fn)
	case *Case:
		for _, a := range s.Arms {
			Walk(a.Cond, fn)
			Walk(a.Result, fn)
		}
		Walk(s.Else, fn)
	case *Call:
		for _, a := range s.Args {
			Walk(a, fn)
		}
	case *ArrayLit, *ArrayCmp, *SubscriptOp, *FieldOp, *RegexMatch, *OpCall, *PGCast, *Lambda:
		// The operators of arrays and nested values: a view reads the
		// columns under them as under any other.
		mapChildren(s, func(c Scalar) Scalar {
			Walk(c, fn)
			return c
		})
	}
}
