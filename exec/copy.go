package exec

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/sql"
)

// COPY ... TO STDOUT.
//
// The statement's rows come from a RowSource (rowsource.go): COPY
// (query) reads the query's, COPY relation [(columns)] those of SELECT
// columns FROM relation. The options become a pgcodec.CopyFormat, and
// the ResultWriter's CopyOut (pgwire) turns each row into a line of it.
// The rows are read in batches of what the source has ready; when it
// has nothing ready, what was written is flushed before COPY waits for
// more, so a live source's rows reach the client as they come.

// copyBatch is how many rows COPY asks a source for at a time.
const copyBatch = 1024

func (s *Session) copyStmt(ctx context.Context, st *sql.Copy, w ResultWriter) error {
	q := st.Query
	if q == nil {
		sel, err := s.copyTableQuery(st)
		if err != nil {
			return err
		}
		q = sel
	}
	// The format is checked before the query runs, as Postgres does.
	f, forceQuote, err := copyFormat(st.Options)
	if err != nil {
		return err
	}
	src, err := s.openSource(ctx, q, w)
	if err != nil {
		return err
	}
	defer src.Close()
	cols := src.Columns()
	if forceQuote != nil {
		if f.ForceQuote, err = forceQuoteColumns(forceQuote, cols); err != nil {
			return err
		}
	}
	n, err := copyRows(ctx, src, &f, w)
	if err != nil {
		return err
	}
	return w.Complete("COPY " + strconv.Itoa(n))
}

// copyRows writes src's rows to w as a COPY in f, flushing before each
// wait for more, and returns how many it wrote. It returns ctx's error
// as soon as ctx ends (a cancel or statement_timeout).
func copyRows(ctx context.Context, src RowSource, f *pgcodec.CopyFormat, w ResultWriter) (int, error) {
	if err := w.CopyOut(src.Columns(), f); err != nil {
		return 0, err
	}
	n := 0
	batch := make([][]any, 0, copyBatch)
	for {
		// Take what is ready; when nothing is, what was written goes to
		// the client before the wait for more.
		rows, done, err := src.Next(ctx, batch[:0], copyBatch, 0)
		if err == nil && len(rows) == 0 && !done {
			if err := w.Flush(); err != nil {
				return n, err
			}
			rows, done, err = src.Next(ctx, batch[:0], copyBatch, waitForever)
		}
		if err != nil {
			return n, err
		}
		for _, r := range rows {
			if err := w.Row(r); err != nil {
				return n, err
			}
		}
		n += len(rows)
		clear(rows)
		if done {
			return n, nil
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
	}
}

// waitForever is the wait of a Next that returns once it has a row, or
// the source ends, however long that takes (the statement's context
// still bounds it).
const waitForever = time.Duration(math.MaxInt64)

// copyTableQuery is the SELECT of COPY relation [(columns)].
func (s *Session) copyTableQuery(st *sql.Copy) (*sql.Select, error) {
	rel, err := s.e.Catalog.Resolve(st.Table)
	if err != nil {
		return nil, withPosition(err, st.TablePos)
	}
	sel := &sql.Select{From: []sql.FromItem{&sql.TableRef{Name: rel.Name, Pos: st.TablePos}}}
	if st.Columns == nil {
		sel.Items = []sql.SelectItem{{Star: true}}
		return sel, nil
	}
	seen := map[int]bool{}
	for i, name := range st.Columns {
		j := rel.Schema.Index(name)
		if j < 0 {
			return nil, pgerr.New(pgerr.UndefinedColumn, "column %q of relation %q does not exist", name, rel.Name).WithPosition(st.ColumnPos[i])
		}
		if seen[j] {
			return nil, pgerr.New(pgerr.DuplicateColumn, "column %q specified more than once", name).WithPosition(st.ColumnPos[i])
		}
		seen[j] = true
		sel.Items = append(sel.Items, sql.SelectItem{Expr: &sql.ColumnRef{Name: rel.Schema.Columns[j].Name}})
	}
	return sel, nil
}

// copyFormat makes the format of COPY's options. forceQuote is the
// FORCE_QUOTE option, checked against the columns once they are known.
func copyFormat(opts []sql.CopyOption) (f pgcodec.CopyFormat, forceQuote *sql.CopyOption, err error) {
	seen := map[string]bool{}
	byName := map[string]*sql.CopyOption{}
	for i := range opts {
		o := &opts[i]
		if seen[o.Name] {
			return f, nil, pgerr.New(pgerr.SyntaxError, "conflicting or redundant options").WithPosition(o.Pos)
		}
		seen[o.Name] = true
		byName[o.Name] = o
	}
	csv := false
	if o := byName["format"]; o != nil {
		switch strings.ToLower(o.Value) {
		case "text":
		case "csv":
			csv = true
		case "binary":
			return f, nil, pgerr.New(pgerr.FeatureNotSupported, "COPY FORMAT binary is not supported").WithPosition(o.Pos).
				WithHint("Use FORMAT text or FORMAT csv.")
		default:
			return f, nil, pgerr.New(pgerr.InvalidParameterValue, "COPY format %q not recognized", o.Value).WithPosition(o.Pos)
		}
	}
	f = pgcodec.DefaultCopyFormat(csv)
	if o := byName["header"]; o != nil {
		switch v := strings.ToLower(o.Value); {
		case !o.HasValue:
			f.Header = true
		case v == "match":
			return f, nil, pgerr.New(pgerr.FeatureNotSupported, "cannot use \"match\" with HEADER in COPY TO")
		default:
			on, ok := boolOption(v)
			if !ok {
				return f, nil, pgerr.New(pgerr.SyntaxError, "header requires a Boolean value or \"match\"").WithPosition(o.Pos)
			}
			f.Header = on
		}
	}
	str := func(name string, dst *string) error {
		o := byName[name]
		if o == nil {
			return nil
		}
		if !o.HasValue || o.Star || o.Columns != nil {
			return pgerr.New(pgerr.SyntaxError, "%s requires a string value", name).WithPosition(o.Pos)
		}
		*dst = o.Value
		return nil
	}
	for _, name := range []string{"delimiter", "null", "quote", "escape", "encoding"} {
		var v string
		if err := str(name, &v); err != nil {
			return f, nil, err
		}
		if byName[name] == nil {
			continue
		}
		switch name {
		case "delimiter":
			f.Delimiter = v
		case "null":
			f.Null = v
		case "quote", "escape":
			if !csv {
				return f, nil, pgerr.New(pgerr.FeatureNotSupported, "COPY %s available only in CSV mode", name)
			}
			if name == "quote" {
				f.Quote = v
				if byName["escape"] == nil {
					f.Escape = v
				}
			} else {
				f.Escape = v
			}
		case "encoding":
			if e := strings.ToLower(strings.ReplaceAll(v, "-", "")); e != "utf8" && e != "unicode" {
				return f, nil, pgerr.New(pgerr.FeatureNotSupported, "COPY ENCODING %s is not supported", v).WithPosition(byName[name].Pos).
					WithHint("basin writes UTF8.")
			}
		}
	}
	if o := byName["force_quote"]; o != nil {
		if !csv {
			return f, nil, pgerr.New(pgerr.FeatureNotSupported, "COPY force quote available only in CSV mode")
		}
		if !o.Star && o.Columns == nil {
			return f, nil, pgerr.New(pgerr.SyntaxError, "argument to option \"force_quote\" must be a list of column names").WithPosition(o.Pos)
		}
		forceQuote = o
	}
	if byName["force_not_null"] != nil {
		return f, nil, pgerr.New(pgerr.FeatureNotSupported, "COPY force not null only available using COPY FROM")
	}
	if byName["force_null"] != nil {
		return f, nil, pgerr.New(pgerr.FeatureNotSupported, "COPY force null only available using COPY FROM")
	}
	if o := byName["freeze"]; o != nil {
		return f, nil, pgerr.New(pgerr.FeatureNotSupported, "COPY FREEZE is only for COPY FROM").WithPosition(o.Pos)
	}
	return f, forceQuote, f.Validate()
}

// forceQuoteColumns marks the columns FORCE_QUOTE names.
func forceQuoteColumns(o *sql.CopyOption, cols []catalog.Column) ([]bool, error) {
	marks := make([]bool, len(cols))
	if o.Star {
		for i := range marks {
			marks[i] = true
		}
		return marks, nil
	}
	for _, name := range o.Columns {
		found := false
		for i, c := range cols {
			if c.Name == name {
				marks[i], found = true, true
			}
		}
		if !found {
			return nil, pgerr.New(pgerr.UndefinedColumn, "column %q does not exist", name)
		}
	}
	return marks, nil
}

// boolOption reads a Boolean option value as Postgres's COPY does.
func boolOption(v string) (on, ok bool) {
	switch v {
	case "true", "on", "1", "yes":
		return true, true
	case "false", "off", "0", "no":
		return false, true
	}
	return false, false
}
