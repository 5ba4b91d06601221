package exec

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// Per-session and per-statement resource limits. Each is a session
// setting with a documented default (docs/configuration.md), so an
// operator or a client can raise it for the one session that needs more;
// what they bound is in docs/operations.md ("Resources").
const (
	// settingMaxStatementBytes bounds the text of one Query or Parse
	// message's SQL: parsing costs memory in proportion to it (TiDB's
	// parser keeps about a kilobyte per list item), so a statement
	// larger than this is refused before it is lexed.
	settingMaxStatementBytes = "basin.max_statement_bytes"
	defaultMaxStatementBytes = 1 << 20

	// settingMaxPrepared bounds the prepared statements (Parse messages)
	// a session holds at once: each keeps its parsed statement and plan
	// (10 sessions of 10,000 statements once took 950 MB).
	settingMaxPrepared = "basin.max_prepared_statements"
	defaultMaxPrepared = 1000

	// settingQueryMemory bounds what one pull query holds in memory:
	// the pull engine's ORDER BY, GROUP BY and DISTINCT state (one
	// 2M-row ORDER BY once took 635 MB), and everything the relational
	// engine's operators buffer (query/memory.go): rows read, joins,
	// sorts, groups, windows, set operations, subqueries. basin does not
	// spill to disk: a query past it fails with 53200 naming the
	// setting and the operator. The default, 256MB, lets a query sort
	// or join about a million narrow rows while ten such queries at once
	// stay within a few GB of heap; the smallest, 64kB, is for tests.
	settingQueryMemory = "basin.query_memory"
	defaultQueryMemory = 256 << 20
)

// parseBytes parses a memory setting as Postgres writes them: a number
// of bytes, or a number with a unit B, kB, MB, GB or TB (powers of 1024,
// case-insensitive).
func parseBytes(v string) (int64, error) {
	v = strings.TrimSpace(v)
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad number")
	}
	unit := map[string]int64{"": 1, "b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40}
	f, ok := unit[strings.ToLower(strings.TrimSpace(v[i:]))]
	if !ok {
		return 0, fmt.Errorf("bad unit")
	}
	if n > (1<<62)/f {
		return 0, fmt.Errorf("too large")
	}
	return n * f, nil
}

// forwardedStatementSlack is how much longer than its
// basin.max_statement_bytes a statement of a forwarded session (a read
// another node forwards here) may be: the forwarding node sets the
// client's limit on the session and sends the client's WHERE clause,
// which was within it, plus the partition's keys as parameters ($n, at
// most 30,000 a statement: node/forward.go's maxForwardKeys) and the
// relation's columns.
const forwardedStatementSlack = 1 << 20

// checkStatementSize refuses a statement text longer than the session's
// basin.max_statement_bytes (54000), before any of it is parsed.
func (s *Session) checkStatementSize(text string) error {
	d := s.derivedSettings()
	max := d.maxStatementBytes
	if int64(len(text)) <= max || d.forwarded != "off" && int64(len(text)) <= max+forwardedStatementSlack {
		return nil
	}
	return pgerr.New(pgerr.ProgramLimitExceeded, "statement of %d bytes is longer than basin.max_statement_bytes (%s)", len(text), eval.FormatBytes(max)).
		WithHint("Send a shorter statement (split a long INSERT or IN list), or raise the limit for the session: SET basin.max_statement_bytes = '4MB'.")
}

// countPrepared counts a prepared statement the client made (Parse),
// refusing it past the session's basin.max_prepared_statements (53000).
// p.Close gives it back.
func (s *Session) countPrepared(p *Prepared) error {
	max := s.derivedSettings().maxPrepared
	if n := s.prepared.Add(1); n > int64(max) {
		s.prepared.Add(-1)
		return pgerr.New(pgerr.InsufficientResources, "session already has %d prepared statements, the most basin.max_prepared_statements (%d) allows", n-1, max).
			WithHint("Close (or DEALLOCATE) prepared statements the client no longer uses, use the unnamed statement, or raise the limit for the session: SET basin.max_prepared_statements = 5000.")
	}
	p.counted = true
	return nil
}

// parseStatement parses text under the statement's context: a parse
// that outlasts statement_timeout, or is cancelled, fails with 57014
// once it ends. (TiDB's parser cannot be interrupted; what bounds its
// time and memory is the statement's size, checked first, and the
// expression depth sql refuses past sql.MaxExpressionDepth.)
func (s *Session) parseStatement(ctx context.Context, text string) ([]sql.Parsed, error) {
	if err := s.checkStatementSize(text); err != nil {
		return nil, err
	}
	pctx, cancel, timeout := s.statementContext(ctx)
	defer cancel()
	stmts, err := sql.ParseStatements(text)
	if err == nil && pctx.Err() != nil {
		err = pctx.Err()
	}
	if err = timeout(err); errors.Is(err, context.Canceled) {
		err = pgerr.New(pgerr.QueryCanceled, "canceling statement due to user request")
	}
	return stmts, err
}
