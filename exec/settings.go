package exec

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/eval"
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/pgcodec"
	"github.com/basindb/basin/sql"
)

// readOnlySettings can be shown but not set.
var readOnlySettings = map[string]bool{
	"server_version": true, "server_encoding": true, "integer_datetimes": true,
	"is_superuser": true, "session_authorization": true,
	"basin.last_write_position": true,
}

// set runs SET, SET ... TO DEFAULT, RESET and RESET ALL. A reset returns
// a setting to its value at session start. SET LOCAL and SET TRANSACTION
// last until the end of the transaction, and outside one do nothing but
// warn, as in Postgres.
func (s *Session) set(st *sql.Set, w ResultWriter) error {
	name := strings.ToLower(st.Name)
	if name == "all" && st.Reset {
		for k := range defaultSettings {
			if !readOnlySettings[k] {
				s.setVar(k, s.initial[k])
			}
		}
		return w.Complete("RESET")
	}
	if _, known := defaultSettings[name]; !known {
		return pgerr.New(pgerr.UndefinedObject, "unrecognized configuration parameter %q", st.Name)
	}
	if readOnlySettings[name] {
		if st.Reset {
			return w.Complete("SET")
		}
		return pgerr.New(pgerr.CantChangeRuntimeParam, "parameter %q cannot be changed", st.Name)
	}
	v := st.Value
	if st.Reset {
		v = s.initial[name]
	}
	v, err := normalizeSetting(name, v)
	if err != nil {
		return err
	}
	if st.Local || strings.HasPrefix(name, "transaction_") {
		if !s.inTxn {
			what := "SET LOCAL"
			if !st.Local {
				what = "SET TRANSACTION"
			}
			_ = w.Notice(&pgerr.Error{Severity: "WARNING", Code: pgerr.NoActiveSQLTransaction,
				Message: what + " can only be used in transaction blocks"})
			return w.Complete("SET")
		}
		s.setForTxn(name, v)
		return w.Complete("SET")
	}
	delete(s.txnSaved, name) // a session-level SET outlives the transaction
	s.setVar(name, v)
	return w.Complete("SET")
}

// endTxn ends a transaction block: settings made for it are restored.
func (s *Session) endTxn() {
	s.inTxn, s.txnFailed, s.txnWarned = false, false, false
	for k, v := range s.txnSaved {
		s.setVar(k, v)
	}
	s.txnSaved = nil
}

// normalizeSetting validates a setting's value and returns it as SHOW
// shows it.
func normalizeSetting(name, v string) (string, error) {
	invalid := func(hint string) error {
		return pgerr.New(pgerr.InvalidParameterValue, "invalid value for parameter %q: %q", name, v).WithHint("%s", hint)
	}
	switch name {
	case "basin.acceptable_offset_lag":
		if v == "" {
			return v, nil
		}
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
			return "", invalid("Give a non-negative number of records.")
		}
	case "basin.acceptable_time_lag", "basin.position_wait", "basin.forward_timeout":
		if v == "" {
			return v, nil
		}
		if d, err := time.ParseDuration(v); err != nil || d < 0 {
			return "", invalid("Give a non-negative duration such as '2s' or '500ms'.")
		}
	case "basin.read_from":
		v = strings.ToLower(v)
		switch v {
		case "active", "any", "freshest":
		default:
			return "", invalid("Valid values are active, any and freshest.")
		}
	case "basin.forwarded":
		// 'restoring': a forwarded read that may also be served by a
		// replica still restoring (the forwarding node's last resort).
		if strings.EqualFold(v, "restoring") {
			return "restoring", nil
		}
		fallthrough
	case "basin.freshness_notices", "basin.read_your_writes", "basin.monotonic_reads", settingPlanCache:
		switch strings.ToLower(v) {
		case "on", "true", "yes", "1":
			return "on", nil
		case "off", "false", "no", "0":
			return "off", nil
		}
		return "", pgerr.New(pgerr.InvalidParameterValue, "parameter %q requires a Boolean value", name)
	case "basin.min_position":
		if _, err := materialize.ParsePosition(v); err != nil {
			return "", invalid("Give a position token as a read or write returned it (the _position pseudo-column).")
		}
	case "timezone":
		if name, ok := pgcodec.HoursZone(v); ok {
			return name, nil
		}
		loc, ok := pgcodec.ParseZone(v)
		if !ok {
			return "", pgerr.New(pgerr.InvalidParameterValue, "invalid value for parameter \"TimeZone\": %q", v).
				WithHint("Give a zone name of the IANA database (Europe/Paris, America/New_York, UTC) or an offset from UTC (SET TIME ZONE '+02' is two hours east of UTC).")
		}
		if name := loc.String(); name != "UTC" && name != "Local" && !strings.ContainsAny(v, "+-0123456789") {
			return name, nil // the database's spelling: europe/paris → Europe/Paris
		}
		if loc == time.UTC && strings.EqualFold(strings.TrimSpace(v), "utc") {
			return "UTC", nil
		}
		return v, nil
	case "datestyle":
		// basin writes dates in ISO only; the field order is accepted
		// and shown, as drivers check DateStyle starts with ISO.
		order := "MDY"
		for _, part := range strings.Split(v, ",") {
			switch p := strings.ToUpper(strings.TrimSpace(part)); p {
			case "ISO":
			case "MDY", "DMY", "YMD":
				order = p
			case "US", "NONEURO", "NONEUROPEAN":
				order = "MDY"
			case "EURO", "EUROPEAN":
				order = "DMY"
			case "POSTGRES", "SQL", "GERMAN":
				return "", pgerr.New(pgerr.FeatureNotSupported, "DateStyle %s is not supported; basin writes ISO dates", p)
			default:
				return "", invalid("Valid values are ISO and a field order: MDY, DMY or YMD.")
			}
		}
		return "ISO, " + order, nil
	case settingMaxStatementBytes:
		n, err := parseBytes(v)
		if err != nil || n < 1024 {
			return "", invalid("Give a size of at least 1kB: bytes, or a number with a unit: kB, MB, GB.")
		}
		return eval.FormatBytes(n), nil
	case settingQueryMemory:
		n, err := parseBytes(v)
		if err != nil || n < 64<<10 {
			return "", invalid("Give a size of at least 64kB: bytes, or a number with a unit: kB, MB, GB.")
		}
		return eval.FormatBytes(n), nil
	case settingMaxPrepared:
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || n < 1 {
			return "", invalid("Give a positive number of prepared statements.")
		}
		return strings.TrimSpace(v), nil
	case "statement_timeout", "idle_in_transaction_session_timeout", "lock_timeout":
		ms, err := parseMillis(v)
		if err != nil {
			return "", invalid("Give milliseconds, or a number with a unit: ms, s, min, h, d.")
		}
		return formatMillis(ms), nil
	case "client_encoding":
		if u := strings.ToUpper(strings.ReplaceAll(v, "-", "")); u != "UTF8" && u != "UNICODE" {
			return "", pgerr.New(pgerr.FeatureNotSupported, "encoding %q is not supported; basin speaks UTF8", v)
		}
		return "UTF8", nil
	}
	return v, nil
}

// parseMillis parses a Postgres time setting: a number of milliseconds,
// or a number with one of the units ms, s, min, h, d.
func parseMillis(v string) (int64, error) {
	v = strings.TrimSpace(v)
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.') {
		i++
	}
	n, err := strconv.ParseFloat(v[:i], 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad number")
	}
	unit := map[string]float64{"": 1, "ms": 1, "s": 1000, "min": 60000, "h": 3600000, "d": 86400000}
	f, ok := unit[strings.ToLower(strings.TrimSpace(v[i:]))]
	if !ok {
		return 0, fmt.Errorf("bad unit")
	}
	return int64(n * f), nil
}

// formatMillis shows a duration as SHOW does: in the largest unit that
// divides it.
func formatMillis(ms int64) string {
	switch {
	case ms == 0:
		return "0"
	case ms%86400000 == 0:
		return strconv.FormatInt(ms/86400000, 10) + "d"
	case ms%3600000 == 0:
		return strconv.FormatInt(ms/3600000, 10) + "h"
	case ms%60000 == 0:
		return strconv.FormatInt(ms/60000, 10) + "min"
	case ms%1000 == 0:
		return strconv.FormatInt(ms/1000, 10) + "s"
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// statementContext bounds a statement by statement_timeout. The returned
// error mapper turns the timeout into 57014 as Postgres reports it.
func (s *Session) statementContext(ctx context.Context) (context.Context, context.CancelFunc, func(error) error) {
	timeout := s.derivedSettings().statementTimeout
	if timeout <= 0 {
		return ctx, func() {}, func(err error) error { return err }
	}
	tctx, cancel := context.WithTimeoutCause(ctx, timeout, errStatementTimeout)
	return tctx, cancel, func(err error) error {
		if err != nil && context.Cause(tctx) == errStatementTimeout && ctx.Err() == nil {
			return pgerr.New(pgerr.QueryCanceled, "canceling statement due to statement timeout")
		}
		return err
	}
}

var errStatementTimeout = errors.New("exec: statement timeout")

// statementCloser is the pgwire ResultWriter's access to the connection's
// prepared statements (pgwire.StatementCloser).
type statementCloser interface {
	ClosePrepared(name string) bool
	CloseAllPrepared()
}

// closerOf finds the statementCloser under w's wrappers, nil if none.
func closerOf(w ResultWriter) statementCloser {
	for w != nil {
		if c, ok := w.(statementCloser); ok {
			return c
		}
		u, ok := w.(interface{ unwrap() ResultWriter })
		if !ok {
			return nil
		}
		w = u.unwrap()
	}
	return nil
}

// deallocate runs DEALLOCATE.
func (s *Session) deallocate(st *sql.Deallocate, w ResultWriter) error {
	c := closerOf(w)
	if st.All {
		if c != nil {
			c.CloseAllPrepared()
		}
		return w.Complete("DEALLOCATE ALL")
	}
	if c == nil || !c.ClosePrepared(st.Name) {
		return pgerr.New(pgerr.InvalidSQLStatementName, "prepared statement %q does not exist", st.Name)
	}
	return w.Complete("DEALLOCATE")
}

// discard runs DISCARD. DISCARD ALL resets every setting to its value at
// connection start and closes prepared statements and portals, as a
// connection pool expects before handing the connection to another
// client.
func (s *Session) discard(st *sql.Discard, w ResultWriter) error {
	if st.Kind != sql.DiscardAll {
		return w.Complete("DISCARD " + map[sql.DiscardKind]string{sql.DiscardPlans: "PLANS", sql.DiscardSequences: "SEQUENCES", sql.DiscardTemp: "TEMP"}[st.Kind])
	}
	if s.inTxn {
		return pgerr.New(pgerr.ActiveSQLTransaction, "DISCARD ALL cannot run inside a transaction block")
	}
	for k := range defaultSettings {
		if !readOnlySettings[k] {
			s.setVar(k, s.initial[k])
		}
	}
	if c := closerOf(w); c != nil {
		c.CloseAllPrepared()
	}
	s.cursors.closeIf(func(*cursorState) bool { return true })
	return w.Complete("DISCARD ALL")
}

// setVar changes a setting after the session started; every such change
// goes through it, so that what derivedSettings and Memo keep is made
// again after it.
func (s *Session) setVar(name, value string) {
	s.vars[name] = value
	s.varsGen.Add(1)
}

// derived are the settings every statement reads, parsed.
type derived struct {
	valid bool
	gen   uint64 // the session's varsGen they were made at
	// reported is what ParameterStatus returns (callers must not modify
	// it).
	reported map[string]string
	// positionWait is basin.position_wait, statementTimeout
	// statement_timeout (0: none).
	positionWait, statementTimeout time.Duration
	// readYourWrites and monotonicReads are basin.read_your_writes and
	// basin.monotonic_reads; minPosition is basin.min_position parsed
	// (nil when empty or not a position); forwarded basin.forwarded.
	readYourWrites, monotonicReads bool
	minPosition                    materialize.Position
	forwarded                      string
	// maxStatementBytes is basin.max_statement_bytes, queryMemory
	// basin.query_memory, maxPrepared basin.max_prepared_statements.
	maxStatementBytes, queryMemory int64
	maxPrepared                    int
	// loc is TimeZone's location.
	loc *time.Location
}

// derivedSettings are the settings every statement reads, parsed once per
// change of the settings rather than once per statement.
func (s *Session) derivedSettings() *derived {
	d := &s.derived
	if gen := s.varsGen.Load(); !d.valid || d.gen != gen {
		d.valid, d.gen = true, gen
		d.reported = make(map[string]string, len(reportedSettings)+1)
		for _, k := range reportedSettings {
			name := k
			if n, ok := reportedNames[k]; ok {
				name = n
			}
			d.reported[name] = s.vars[k]
		}
		d.reported["session_authorization"] = s.user
		d.positionWait = 5 * time.Second
		if w, err := time.ParseDuration(s.vars["basin.position_wait"]); err == nil {
			d.positionWait = w
		}
		ms, _ := parseMillis(s.vars["statement_timeout"])
		d.statementTimeout = time.Duration(ms) * time.Millisecond
		d.readYourWrites = s.vars["basin.read_your_writes"] == "on"
		d.monotonicReads = s.vars["basin.monotonic_reads"] == "on"
		d.minPosition = nil
		if tok := s.vars["basin.min_position"]; tok != "" {
			if p, err := materialize.ParsePosition(tok); err == nil && len(p) > 0 {
				d.minPosition = p
			}
		}
		d.forwarded = s.vars["basin.forwarded"]
		d.maxStatementBytes = defaultMaxStatementBytes
		if n, err := parseBytes(s.vars[settingMaxStatementBytes]); err == nil {
			d.maxStatementBytes = n
		}
		d.queryMemory = defaultQueryMemory
		if n, err := parseBytes(s.vars[settingQueryMemory]); err == nil {
			d.queryMemory = n
		}
		d.loc = time.UTC
		if loc, ok := pgcodec.ParseZone(s.vars["timezone"]); ok {
			d.loc = loc
		}
		d.maxPrepared = defaultMaxPrepared
		if n, err := strconv.Atoi(s.vars[settingMaxPrepared]); err == nil {
			d.maxPrepared = n
		}
	}
	return d
}

// Memo returns what MemoPut kept for key since the session's settings
// last changed: values a read derives from the settings and immutable
// things named by key (a relation's read bounds), made once per change of
// the settings rather than once per read. Memo and MemoPut are safe for
// concurrent use (the partitions of one read run in parallel).
func (s *Session) Memo(key any) (any, bool) {
	m := &s.memo
	m.Lock()
	defer m.Unlock()
	if m.gen != s.varsGen.Load() {
		return nil, false
	}
	v, ok := m.m[key]
	return v, ok
}

// MemoPut keeps value for key until the session's settings change; value
// must have been derived from the settings as they are.
func (s *Session) MemoPut(key, value any) {
	m := &s.memo
	m.Lock()
	defer m.Unlock()
	if gen := s.varsGen.Load(); m.gen != gen || len(m.m) >= maxMemo {
		m.gen, m.m = gen, nil
	}
	if m.m == nil {
		m.m = make(map[any]any)
	}
	m.m[key] = value
}

// maxMemo bounds what a session's Memo keeps: past it, it starts over.
const maxMemo = 64

// Setting implements Session.
func (s *Session) Setting(name string) (string, bool) {
	v, ok := s.vars[strings.ToLower(name)]
	return v, ok
}

// SetConfig implements Session: set_config(name, value, is_local)
// is SET [LOCAL] name = value.
func (s *Session) SetConfig(name, value string, local bool) (string, error) {
	if err := s.set(&sql.Set{Name: name, Value: value, Local: local}, discardWriter{}); err != nil {
		return "", err
	}
	v, _ := s.Setting(name)
	return v, nil
}

// discardWriter drops a statement's result.
type discardWriter struct{}

func (discardWriter) Columns([]catalog.Column) error { return nil }
func (discardWriter) Row([]any) error                { return nil }
func (discardWriter) Complete(string) error          { return nil }
func (discardWriter) Empty() error                   { return nil }
func (discardWriter) Notice(*pgerr.Error) error      { return nil }
func (discardWriter) Flush() error                   { return nil }
func (discardWriter) CopyOut([]catalog.Column, *pgcodec.CopyFormat) error {
	return nil
}

// Snapshot is the catalog of a statement of the session started at
// started, as catalog queries read it (pg_catalog, information_schema).
func (s *Session) Snapshot(started time.Time) *catalog.PGSnapshot {
	return s.e.Catalog.PGSnapshot(s.catalogInfo(started))
}

// catalogInfo is what the virtual catalog shows of the session.
func (s *Session) catalogInfo(started time.Time) catalog.SessionInfo {
	info := catalog.SessionInfo{User: s.user, Database: s.db, PID: s.pid, Started: started,
		ApplicationName: s.vars["application_name"], ViewQuery: eval.ViewQuery, Activity: s.e.Activity,
		Cursors: s.cursors.list}
	all := map[string]string{"max_index_keys": "32", "max_function_args": "100"}
	for k, v := range eval.ExtraSettings {
		all[k] = v
	}
	for k, v := range s.vars {
		all[k] = v
	}
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		info.Settings = append(info.Settings, catalog.Setting{Name: k, Value: all[k]})
	}
	return info
}
