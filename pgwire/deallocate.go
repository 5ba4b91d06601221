package pgwire

// StatementCloser is implemented by the ResultWriter the server hands a
// Session: prepared statements live in the connection, so the SQL
// statements that drop them (DEALLOCATE, DISCARD ALL) reach them through
// the writer of the statement that runs them.
type StatementCloser interface {
	// ClosePrepared closes the named prepared statement and its portals;
	// false when there is no such statement.
	ClosePrepared(name string) bool
	// CloseAllPrepared closes every named prepared statement and every
	// portal but the one running.
	CloseAllPrepared()
}

// ClosePrepared implements StatementCloser.
func (r *resultWriter) ClosePrepared(name string) bool {
	st, ok := r.c.stmts[name]
	if ok {
		r.c.closeStatement(st)
	}
	return ok
}

// CloseAllPrepared implements StatementCloser. The unnamed statement and
// portal stay: the statement running may be executing from them.
func (r *resultWriter) CloseAllPrepared() {
	for name, st := range r.c.stmts {
		if name != "" {
			r.c.closeStatement(st)
		}
	}
	for name, p := range r.c.portals {
		if name != "" {
			r.c.closePortal(p)
		}
	}
}
