package planner

import (
	"strings"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// WindowFrame is a window's ROWS, RANGE or GROUPS frame.
type WindowFrame struct {
	Range, Groups bool // neither: ROWS
	Start, End    FrameBound
}

// FrameBound is one end of a frame; Offset is set for the offset kinds.
// A ROWS offset is a BIGINT, a RANGE offset has the ORDER BY column's
// type.
type FrameBound struct {
	Kind   sql.BoundKind
	Offset Scalar
}

func (f *WindowFrame) String() string {
	mode := "ROWS"
	if f.Range {
		mode = "RANGE"
	} else if f.Groups {
		mode = "GROUPS"
	}
	return mode + " BETWEEN " + f.Start.String() + " AND " + f.End.String()
}

func (b FrameBound) String() string {
	switch b.Kind {
	case sql.UnboundedPreceding:
		return "UNBOUNDED PRECEDING"
	case sql.OffsetPreceding:
		return b.Offset.String() + " PRECEDING"
	case sql.CurrentRow:
		return "CURRENT ROW"
	case sql.OffsetFollowing:
		return b.Offset.String() + " FOLLOWING"
	}
	return "UNBOUNDED FOLLOWING"
}

// boundExpr is an expression bound already, handed back to the binder
// in place of the syntax it came from: a window aggregate's argument,
// bound (and lifted onto a grouped row) before the aggregate is typed.
type boundExpr struct {
	s   Scalar
	pos int
}

func (e *boundExpr) Position() int { return e.pos }

// bindWindow binds a window function call: the ranking, distribution and
// offset functions Postgres has, and any aggregate over a frame. In a
// grouped SELECT the window runs over the aggregated rows, so its
// expressions may hold aggregates (rank() OVER (ORDER BY sum(x))).
func (b *binder) bindWindow(e *sql.Func) (Scalar, error) {
	if b.windows == nil {
		where := b.clause
		if where == "" {
			where = "this context"
		}
		return nil, pgerr.New(pgerr.WindowingError, "window functions are not allowed in %s", where).WithPosition(e.Pos)
	}
	saved := b.windows
	b.windows = nil // no windows inside windows
	defer func() { b.windows = saved }()
	bindOver := func(x sql.Expr) (Scalar, error) {
		s, err := b.bind(x)
		if err != nil || b.winLift == nil {
			return s, err
		}
		return b.winLift(s, x.Position())
	}
	w := WindowCall{Func: e.Name}
	for _, p := range e.Over.PartitionBy {
		s, err := bindOver(p)
		if err != nil {
			return nil, err
		}
		w.PartitionBy = append(w.PartitionBy, s)
	}
	for _, o := range e.Over.OrderBy {
		s, err := bindOver(o.Expr)
		if err != nil {
			return nil, err
		}
		k := SortKey{Expr: s, Desc: o.Desc, NullsFirst: o.Desc}
		if o.NullsFirst != nil {
			k.NullsFirst = *o.NullsFirst
		}
		w.Order = append(w.Order, k)
	}
	args := make([]Scalar, len(e.Args))
	for i, a := range e.Args {
		s, err := bindOver(a)
		if err != nil {
			return nil, err
		}
		args[i] = s
	}
	nargs := func(min, max int) error {
		if len(args) < min || len(args) > max || e.Star {
			return pgerr.New(pgerr.UndefinedFunction, "function %s(%s) does not exist", e.Name, argTypeList(args)).
				WithPosition(e.Pos).WithHint("No function matches the given name and argument types.")
		}
		return nil
	}
	var err error
	switch e.Name {
	case "row_number", "rank", "dense_rank":
		err = nargs(0, 0)
		w.T = catalog.BigInt
	case "percent_rank", "cume_dist":
		err = nargs(0, 0)
		w.T = catalog.Double
	case "ntile":
		if err = nargs(1, 1); err == nil {
			args[0], err = b.coerce(args[0], catalog.Int, e.Pos, "ntile")
		}
		w.T = catalog.Int
	case "lag", "lead":
		if err = nargs(1, 3); err != nil {
			break
		}
		w.T = windowValueType(args[0])
		if len(args) > 1 {
			args[1], err = b.coerce(args[1], catalog.Int, e.Pos, e.Name)
		}
		if err == nil && len(args) > 2 {
			args[2], err = b.coerce(args[2], w.T, e.Pos, e.Name)
		}
	case "first_value", "last_value":
		err = nargs(1, 1)
		if err == nil {
			w.T = windowValueType(args[0])
		}
	case "nth_value":
		if err = nargs(2, 2); err == nil {
			w.T = windowValueType(args[0])
			args[1], err = b.coerce(args[1], catalog.Int, e.Pos, "nth_value")
		}
	default:
		if !IsAggregate(e.Name) && !queryAggregates[e.Name] {
			return nil, pgerr.New(pgerr.WrongObjectType, "OVER specified, but %s is not a window function nor an aggregate function", e.Name).WithPosition(e.Pos)
		}
		spec, err := b.windowAggregate(e, args)
		if err != nil {
			return nil, err
		}
		w.Agg, w.T = &spec, spec.T
		args = nil
		if spec.Arg != nil {
			args = append(args, spec.Arg)
		}
		if spec.Arg2 != nil {
			args = append(args, spec.Arg2)
		}
	}
	if err != nil {
		return nil, err
	}
	w.Args = args
	if e.Over.Frame != nil {
		if w.Frame, err = b.bindFrame(e.Over.Frame, w.Order); err != nil {
			return nil, err
		}
	}
	*saved = append(*saved, w)
	return &winSlot{i: len(*saved) - 1, t: w.T}, nil
}

// windowValueType is the type of a function returning its argument:
// an untyped literal is text, as Postgres resolves it.
func windowValueType(s Scalar) catalog.Type {
	if t := s.Type(); t != catalog.Unknown {
		return t
	}
	return catalog.Varchar
}

func argTypeList(args []Scalar) string {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = sqlName(a.Type())
	}
	return strings.Join(names, ", ")
}

// windowAggregate types an aggregate used as a window function by the
// rules of the aggregate itself: its arguments, bound already, go back
// through bindAggregate as bound expressions, collected apart from the
// SELECT's own aggregates.
func (b *binder) windowAggregate(e *sql.Func, args []Scalar) (AggSpec, error) {
	call := *e
	call.Over = nil
	call.Args = make([]sql.Expr, len(args))
	for i, a := range args {
		call.Args[i] = &boundExpr{s: a, pos: e.Args[i].Position()}
	}
	var specs []AggSpec
	aggs, inAgg := b.aggs, b.inAgg
	b.aggs, b.inAgg = &specs, false
	defer func() { b.aggs, b.inAgg = aggs, inAgg }()
	if _, err := b.bindAggregate(&call); err != nil {
		return AggSpec{}, err
	}
	spec := specs[0]
	switch {
	case spec.Func == "percentile_cont" || spec.Func == "percentile_disc" || spec.Func == "mode":
		return AggSpec{}, pgerr.New(pgerr.WrongObjectType, "OVER is not supported for ordered-set aggregate %s", spec.Func).WithPosition(e.Pos)
	case len(spec.Order) > 0:
		return AggSpec{}, pgerr.New(pgerr.FeatureNotSupported, "aggregate ORDER BY is not implemented for window functions").WithPosition(e.Pos)
	case spec.Filter != nil:
		return AggSpec{}, pgerr.New(pgerr.FeatureNotSupported, "FILTER in a window function is not supported").WithPosition(e.Pos)
	}
	return spec, nil
}

// bindFrame checks and binds a frame clause as Postgres does.
func (b *binder) bindFrame(f *sql.Frame, order []SortKey) (*WindowFrame, error) {
	bad := func(format string, args ...any) error {
		return pgerr.New(pgerr.WindowingError, format, args...).WithPosition(f.Pos)
	}
	switch {
	case f.Start.Kind == sql.UnboundedFollowing:
		return nil, bad("frame start cannot be UNBOUNDED FOLLOWING")
	case f.End.Kind == sql.UnboundedPreceding:
		return nil, bad("frame end cannot be UNBOUNDED PRECEDING")
	case f.Start.Kind == sql.CurrentRow && f.End.Kind == sql.OffsetPreceding:
		return nil, bad("frame starting from current row cannot have preceding rows")
	case f.Start.Kind == sql.OffsetFollowing && (f.End.Kind == sql.OffsetPreceding || f.End.Kind == sql.CurrentRow):
		return nil, bad("frame starting from following row cannot have preceding rows")
	}
	if f.Groups && len(order) == 0 {
		return nil, bad("GROUPS mode requires an ORDER BY clause")
	}
	mode := "ROWS"
	switch {
	case f.Range:
		mode = "RANGE"
	case f.Groups:
		mode = "GROUPS"
	}
	wf := &WindowFrame{Range: f.Range, Groups: f.Groups}
	for i, fb := range []sql.FrameBound{f.Start, f.End} {
		bound := FrameBound{Kind: fb.Kind}
		if fb.Offset != nil {
			saved := b.winLift
			b.winLift = nil
			off, err := b.bind(fb.Offset)
			b.winLift = saved
			if err != nil {
				return nil, err
			}
			if hasColumnRef(off) {
				return nil, pgerr.New(pgerr.InvalidColumnReference, "argument of %s must not contain variables", mode).
					WithPosition(fb.Offset.Position())
			}
			switch {
			case !f.Range:
				off, err = b.coerce(off, catalog.BigInt, fb.Offset.Position(), "argument of "+mode)
			case len(order) != 1:
				return nil, bad("RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
			case order[0].Expr.Type().Numeric() || rangeOverTime(order[0].Expr.Type()):
				// A number's offset is a number; a timestamp's, a
				// timestamptz's or a date's an interval, as Postgres's
				// in_range functions take. A string constant is read as
				// one.
				want, t := order[0].Expr.Type(), off.Type()
				if rangeOverTime(want) {
					want = catalog.Interval
				}
				if k, ok := off.(*Const); !(ok && k.T == catalog.Varchar) && t != want && (!t.Numeric() || !want.Numeric()) {
					err = pgerr.New(pgerr.FeatureNotSupported, "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s and offset type %s", sqlName(order[0].Expr.Type()), sqlName(t)).
						WithPosition(fb.Offset.Position()).WithHint("Cast the offset value to an appropriate type.")
					break
				}
				off, err = b.coerce(off, want, fb.Offset.Position(), "argument of RANGE")
			default:
				err = pgerr.New(pgerr.FeatureNotSupported, "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s", sqlName(order[0].Expr.Type())).
					WithPosition(f.Pos).WithHint("Offsets of numeric ORDER BY columns are; use ROWS, or an ORDER BY of a number such as extract(epoch FROM ts).")
			}
			if err != nil {
				return nil, err
			}
			bound.Offset = off
		}
		if i == 0 {
			wf.Start = bound
		} else {
			wf.End = bound
		}
	}
	return wf, nil
}

// hasColumnRef reports whether s reads a column of the row.
func hasColumnRef(s Scalar) bool {
	found := false
	mapScalar(s, func(x Scalar) Scalar {
		if _, ok := x.(*ColRef); ok {
			found = true
		}
		return x
	})
	return found
}

// rangeOverTime reports whether a RANGE frame ordered by a column of
// type t takes interval offsets.
func rangeOverTime(t catalog.Type) bool {
	return t == catalog.Timestamp || t == catalog.TimestampTZ || t == catalog.Date || t == catalog.Time
}
