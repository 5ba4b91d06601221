package exec

import (
	"strconv"
	"strings"
	"time"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/sql"
)

// readOnlySettings can be shown but not set.
var readOnlySettings = map[string]bool{
	"server_version": true, "server_encoding": true, "integer_datetimes": true,
	"is_superuser": true, "session_authorization": true,
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
				s.vars[k] = s.initial[k]
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
		if s.txnSaved == nil {
			s.txnSaved = map[string]string{}
		}
		if _, saved := s.txnSaved[name]; !saved {
			s.txnSaved[name] = s.vars[name]
		}
	} else {
		delete(s.txnSaved, name) // a session-level SET outlives the transaction
	}
	s.vars[name] = v
	return w.Complete("SET")
}

// endTxn ends a transaction block: settings made for it are restored.
func (s *Session) endTxn() {
	s.inTxn = false
	for k, v := range s.txnSaved {
		s.vars[k] = v
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
	case "basin.acceptable_time_lag", "basin.position_wait":
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
	case "basin.freshness_notices":
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
	case "client_encoding":
		if u := strings.ToUpper(strings.ReplaceAll(v, "-", "")); u != "UTF8" && u != "UNICODE" {
			return "", pgerr.New(pgerr.FeatureNotSupported, "encoding %q is not supported; basin speaks UTF8", v)
		}
		return "UTF8", nil
	}
	return v, nil
}
