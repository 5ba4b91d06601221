package pgwire

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// The fake backend's side of the extended protocol. Prepare knows these
// texts:
//
//	select 1, types, floats, -- ping, "" (empty), bad value, partial,
//	slow, set app=NAME
//	                    as in fakeSession.Query
//	stream N            N rows (n int8, s text), resumable under a row
//	                    limit
//	stream $1           the same with N a parameter (int8)
//	params T1 T2 ...    one parameter per type name (bool, int4, int8,
//	                    float8, text, timestamp, or any for none); the
//	                    one row echoes the bound values, one column per
//	                    parameter, of the parameter's reported type
//	insert              no rows; tag INSERT 0 1
//	wrong columns       describes an int8 column, reports text
//	no end              Execute returns without Complete
//	exec panics         Execute panics
//	boom, multi         fail at Prepare (42601)
//	prepare panics      Prepare panics

// fakePortalsOpen counts the fake portals bound and not yet closed, in
// all tests: Close of the server must leave none.
var fakePortalsOpen atomic.Int64

// fakePrepared is a statement of the fake backend.
type fakePrepared struct {
	s      *fakeSession
	text   string
	params []catalog.Type
	cols   []catalog.Column
	// rows returns the number of rows for the bound values and row i;
	// nil for a statement without rows.
	rows func(params []any) (int, func(i int) []any, error)
	// exec runs a statement without rows (or a special case) whole.
	exec func(ctx context.Context, params []any, w ResultWriter) error
}

var fakeTypeNames = map[string]catalog.Type{
	"bool": catalog.Boolean, "int4": catalog.Int, "int8": catalog.BigInt, "float8": catalog.Double,
	"text": catalog.Varchar, "timestamp": catalog.Timestamp, "any": catalog.Unknown,
}

func (s *fakeSession) Prepare(ctx context.Context, text string, declared []catalog.Type) (PreparedStatement, error) {
	if s.closed.Load() {
		return nil, errors.New("fake: Prepare on a closed session")
	}
	text = strings.TrimSuffix(strings.TrimSpace(text), ";")
	p := &fakePrepared{s: s, text: text}
	fixed := func(cols []catalog.Column, rows ...[]any) {
		p.cols = cols
		p.rows = func([]any) (int, func(int) []any, error) {
			return len(rows), func(i int) []any { return rows[i] }, nil
		}
	}
	switch {
	case text == "select 1":
		fixed([]catalog.Column{{Name: "one", Type: catalog.BigInt}}, []any{int64(1)})
	case text == "types":
		fixed(typesCols, typesRow, make([]any, len(typesCols)))
	case text == "floats":
		var rows [][]any
		for _, c := range floatCases {
			rows = append(rows, []any{c.f})
		}
		fixed([]catalog.Column{{Name: "f", Type: catalog.Double}}, rows...)
	case text == "" || text == "-- ping":
		p.exec = func(_ context.Context, _ []any, w ResultWriter) error { return w.Empty() }
	case text == "bad value":
		fixed([]catalog.Column{{Name: "n", Type: catalog.BigInt}}, []any{"not a number"})
	case text == "partial":
		p.cols = []catalog.Column{{Name: "n", Type: catalog.BigInt}}
		p.exec = func(_ context.Context, _ []any, w ResultWriter) error {
			if err := w.Row([]any{int64(1)}); err != nil {
				return err
			}
			return pgerr.New(pgerr.DivisionByZero, "division by zero")
		}
	case text == "slow":
		p.exec = func(ctx context.Context, _ []any, w ResultWriter) error {
			s.b.slowCtx.Store(&ctx)
			s.b.started <- text
			if s.b.noBlock {
				return pgerr.New(pgerr.QueryCanceled, "not blocking in this test")
			}
			<-ctx.Done()
			return ctx.Err()
		}
	case strings.HasPrefix(text, "set app="):
		p.exec = func(_ context.Context, _ []any, w ResultWriter) error {
			s.params["application_name"] = strings.TrimPrefix(text, "set app=")
			return w.Complete("SET")
		}
	case strings.HasPrefix(text, "copy "):
		p.exec = func(_ context.Context, _ []any, w ResultWriter) error {
			return fakeCopy(strings.TrimPrefix(text, "copy "), w)
		}
	case text == "insert":
		p.exec = func(_ context.Context, _ []any, w ResultWriter) error { return w.Complete("INSERT 0 1") }
	case text == "wrong columns":
		p.cols = []catalog.Column{{Name: "n", Type: catalog.BigInt}}
		p.exec = func(_ context.Context, _ []any, w ResultWriter) error {
			return w.Columns([]catalog.Column{{Name: "n", Type: catalog.Varchar}})
		}
	case text == "no end":
		p.exec = func(context.Context, []any, ResultWriter) error { return nil }
	case text == "exec panics":
		p.exec = func(context.Context, []any, ResultWriter) error { panic("execute exploded") }
	case text == "prepare panics":
		panic("prepare exploded")
	case text == "multi":
		return nil, pgerr.New(pgerr.SyntaxError, "cannot insert multiple commands into a prepared statement")
	case strings.HasPrefix(text, "stream "):
		arg := strings.TrimPrefix(text, "stream ")
		p.cols = []catalog.Column{{Name: "n", Type: catalog.BigInt}, {Name: "s", Type: catalog.Varchar}}
		if arg == "$1" {
			p.params = []catalog.Type{catalog.BigInt}
		} else if _, err := strconv.Atoi(arg); err != nil {
			return nil, pgerr.New(pgerr.InvalidParameterValue, "bad count: %v", err)
		}
		p.rows = func(params []any) (int, func(int) []any, error) {
			n, _ := strconv.Atoi(arg)
			if arg == "$1" {
				v, ok := params[0].(int64)
				if !ok {
					return 0, nil, pgerr.New(pgerr.InvalidParameterValue, "stream needs a count, got %v", params[0])
				}
				n = int(v)
			}
			return n, func(i int) []any { return []any{int64(i), "row-" + strconv.Itoa(i)} }, nil
		}
	case strings.HasPrefix(text, "params"):
		for i, name := range strings.Fields(text)[1:] {
			t, ok := fakeTypeNames[name]
			if !ok {
				return nil, pgerr.New(pgerr.UndefinedObject, "fake: no type %q", name)
			}
			p.params = append(p.params, t)
			p.cols = append(p.cols, catalog.Column{Name: fmt.Sprintf("p%d", i+1)})
		}
		p.rows = func(params []any) (int, func(int) []any, error) {
			return 1, func(int) []any { return params }, nil
		}
	default:
		return s.queryOnlyError(text)
	}
	// As the engine does: the client's declared types win, then the
	// statement's, then text.
	n := max(len(declared), len(p.params))
	types := make([]catalog.Type, n)
	for i := range types {
		switch {
		case i < len(declared) && declared[i] != catalog.Unknown:
			types[i] = declared[i]
		case i < len(p.params) && p.params[i] != catalog.Unknown:
			types[i] = p.params[i]
		default:
			types[i] = catalog.Varchar
		}
	}
	p.params = types
	if strings.HasPrefix(text, "params") {
		for i := range p.cols {
			p.cols[i].Type = types[i]
		}
	}
	return p, nil
}

// queryOnlyError fails Prepare as Query would fail the text.
func (s *fakeSession) queryOnlyError(text string) (PreparedStatement, error) {
	if text == "boom" {
		return nil, &pgerr.Error{Code: pgerr.SyntaxError, Message: `syntax error at or near "boom"`, Position: 1}
	}
	return nil, &pgerr.Error{Code: pgerr.SyntaxError, Message: fmt.Sprintf("fake backend cannot prepare %q", text), Position: 1}
}

func (p *fakePrepared) ParamTypes() []catalog.Type { return p.params }
func (p *fakePrepared) Columns() []catalog.Column  { return p.cols }
func (p *fakePrepared) Close()                     {}

func (p *fakePrepared) Bind(_ context.Context, params []any) (Portal, error) {
	if len(params) != len(p.params) {
		return nil, fmt.Errorf("fake: %d values for %d parameters", len(params), len(p.params))
	}
	pt := &fakePortal{p: p, params: params}
	if p.rows != nil {
		var err error
		if pt.n, pt.row, err = p.rows(params); err != nil {
			return nil, err
		}
	}
	fakePortalsOpen.Add(1)
	return pt, nil
}

// fakePortal is a portal of the fake backend. Row-returning statements
// resume at row next.
type fakePortal struct {
	p      *fakePrepared
	params []any
	n      int
	row    func(int) []any
	next   int
	closed bool
}

func (pt *fakePortal) Execute(ctx context.Context, w ResultWriter, maxRows int) (bool, error) {
	if pt.closed {
		return false, errors.New("fake: Execute on a closed portal")
	}
	if pt.p.exec != nil {
		return false, pt.p.exec(ctx, pt.params, w)
	}
	if err := w.Columns(pt.p.cols); err != nil {
		return false, err
	}
	sent := 0
	for pt.next < pt.n {
		if err := w.Row(pt.row(pt.next)); err != nil {
			return false, err
		}
		pt.next++
		sent++
		// As Postgres: a portal stops at the limit without looking for
		// more rows.
		if maxRows > 0 && sent == maxRows {
			return true, nil
		}
	}
	return false, w.Complete(fmt.Sprintf("SELECT %d", sent))
}

func (pt *fakePortal) Close() {
	if !pt.closed {
		pt.closed = true
		fakePortalsOpen.Add(-1)
	}
}
