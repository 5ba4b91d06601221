package exec

import (
	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/sql"
)

// Transaction blocks.
//
// basin has no multi-statement transactions: every statement sees the
// views as they are when it runs, and a write is applied when it runs.
// BEGIN, COMMIT and ROLLBACK still behave as a client expects of them,
// because drivers send them on their own (psycopg2 and pgjdbc without
// autocommit wrap every statement in a block):
//
//   - inside a block ReadyForQuery says 'T', and after an error 'E':
//     further statements fail with 25P02 until ROLLBACK (or COMMIT,
//     which then reports ROLLBACK), as in Postgres;
//   - SET LOCAL and SET TRANSACTION last until the block ends, and
//     BEGIN's modes (READ ONLY, ISOLATION LEVEL ...) are its
//     transaction_* settings;
//   - a write in a READ ONLY block, or with default_transaction_read_only
//     on, fails with 25006;
//   - a write in a read-write block is applied at once, with a NOTICE
//     saying that ROLLBACK will not undo it (once per block);
//   - cursors without HOLD end with the block, and so do held cursors
//     the block declared when it rolls back (cursor.go);
//   - portals end with the block (pgwire closes them when the status
//     returns to 'I'), so a client may read a portal in batches across
//     Syncs inside a block, as pgjdbc does with a fetch size.

// TxnStatus is the transaction status ReadyForQuery reports: 'I' outside
// a transaction block, 'T' in one, 'E' in one that failed.
func (s *Session) TxnStatus() byte {
	switch {
	case s.txnFailed:
		return 'E'
	case s.inTxn:
		return 'T'
	}
	return 'I'
}

// txnGate refuses st in a failed transaction block, where only the
// statements that end the block run.
func (s *Session) txnGate(st sql.Statement) error {
	if !s.txnFailed {
		return nil
	}
	if t, ok := st.(*sql.Txn); ok && t.Kind != sql.TxnBegin {
		return nil
	}
	return pgerr.New(pgerr.InFailedSQLTransaction, "current transaction is aborted, commands ignored until end of transaction block").
		WithHint("Run ROLLBACK to end the block.")
}

// failTxn marks the transaction block failed when err is an error; it
// returns err.
func (s *Session) failTxn(err error) error {
	if err != nil && s.inTxn {
		s.txnFailed = true
	}
	return err
}

// txn runs BEGIN, COMMIT and ROLLBACK.
func (s *Session) txn(st *sql.Txn, w ResultWriter) error {
	switch st.Kind {
	case sql.TxnBegin:
		if s.inTxn {
			_ = w.Notice(&pgerr.Error{Severity: "WARNING", Code: pgerr.ActiveSQLTransaction,
				Message: "there is already a transaction in progress"})
			return w.Complete("BEGIN")
		}
		s.inTxn = true
		s.txnSeq++
		for _, name := range []string{"isolation", "read_only", "deferrable"} {
			s.setForTxn("transaction_"+name, s.vars["default_transaction_"+name])
		}
		for _, m := range st.Modes {
			s.setForTxn("transaction_"+m.Name, m.Value)
		}
		return w.Complete("BEGIN")
	case sql.TxnCommit:
		if !s.inTxn {
			_ = w.Notice(&pgerr.Error{Severity: "WARNING", Code: pgerr.NoActiveSQLTransaction,
				Message: "there is no transaction in progress"})
			return w.Complete("COMMIT")
		}
		failed := s.txnFailed
		s.endCursors(failed)
		s.endTxn()
		s.endNotifyTxn(!failed)
		if failed {
			return w.Complete("ROLLBACK")
		}
		return w.Complete("COMMIT")
	default:
		if !s.inTxn {
			_ = w.Notice(&pgerr.Error{Severity: "WARNING", Code: pgerr.NoActiveSQLTransaction,
				Message: "there is no transaction in progress"})
		}
		if s.inTxn {
			s.endCursors(true)
		}
		s.endTxn()
		s.endNotifyTxn(false)
		return w.Complete("ROLLBACK")
	}
}

// setForTxn sets a setting until the transaction block ends.
func (s *Session) setForTxn(name, value string) {
	if s.txnSaved == nil {
		s.txnSaved = map[string]string{}
	}
	if _, saved := s.txnSaved[name]; !saved {
		s.txnSaved[name] = s.vars[name]
	}
	s.setVar(name, value)
}

// checkWrite is called before a statement that changes something (what
// is the statement's name, "INSERT"): it refuses it in a read-only
// transaction and, in a read-write block, warns that the write is not
// part of the block.
func (s *Session) checkWrite(what string, w ResultWriter) error {
	readOnly := s.vars["default_transaction_read_only"]
	if s.inTxn {
		readOnly = s.vars["transaction_read_only"]
	}
	if readOnly == "on" {
		return pgerr.New(pgerr.ReadOnlySQLTransaction, "cannot execute %s in a read-only transaction", what)
	}
	if s.inTxn && !s.txnWarned {
		s.txnWarned = true
		_ = w.Notice(&pgerr.Error{Severity: "NOTICE", Code: pgerr.SuccessfulCompletion,
			Message: what + " is applied at once: basin has no multi-statement transactions",
			Detail:  "ROLLBACK will not undo it."})
	}
	return nil
}

// writeName is the name of a statement that writes, for checkWrite; ""
// for one that does not.
func writeName(st sql.Statement) string {
	switch st := st.(type) {
	case *sql.Insert:
		return "INSERT"
	case *sql.Delete:
		return "DELETE"
	case *sql.CreateSource:
		return "CREATE " + st.Kind.String()
	case *sql.CreateTableAs:
		return "CREATE TABLE AS"
	case *sql.CreateStreamAs:
		return "CREATE STREAM AS"
	case *sql.Drop:
		return "DROP"
	case *sql.Resume:
		return "RESUME"
	case *sql.InsertSelect:
		return "INSERT ... SELECT"
	case *sql.Terminate:
		return "TERMINATE"
	}
	return ""
}
