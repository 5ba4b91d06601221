package sql

import (
	"time"

	"github.com/basindb/basin/internal/pgerr"
)

// The WINDOW clause of an aggregate over a stream and the EMIT clause,
// in ksqlDB's syntax:
//
//	SELECT ... FROM s
//	  WINDOW TUMBLING (SIZE <duration> [, RETENTION <duration>] [, GRACE PERIOD <duration>])
//	  WINDOW HOPPING (SIZE <duration>, ADVANCE BY <duration> [, RETENTION ...] [, GRACE PERIOD ...])
//	  WINDOW SESSION (<duration> [, RETENTION ...] [, GRACE PERIOD ...])
//	  [WHERE ...] GROUP BY ... [HAVING ...]
//	  [EMIT CHANGES | EMIT FINAL]
//
// SQL's own WINDOW clause names windows of window functions (WINDOW w
// AS (...)); the two never look alike, since a named window is followed
// by AS and ksqlDB's kind by its parenthesis. The token layer cuts both
// clauses out of the SELECT before the rewrite, so TiDB never sees
// them, and records them on the Select.

// WindowKind is the kind of a stream window.
type WindowKind uint8

const (
	WindowTumbling WindowKind = iota + 1
	WindowHopping
	WindowSession
)

func (k WindowKind) String() string {
	switch k {
	case WindowTumbling:
		return "TUMBLING"
	case WindowHopping:
		return "HOPPING"
	case WindowSession:
		return "SESSION"
	}
	return "?"
}

// StreamWindow is the WINDOW clause of an aggregate over a stream.
type StreamWindow struct {
	Kind WindowKind
	// Size is a tumbling or hopping window's size, a session window's
	// gap of inactivity.
	Size time.Duration
	// Advance is a hopping window's step.
	Advance time.Duration
	// Retention and Grace are set when HasRetention and HasGrace are.
	Retention, Grace       time.Duration
	HasRetention, HasGrace bool
	Pos                    int // the WINDOW keyword's character position
}

// EmitMode is the EMIT clause of a query.
type EmitMode uint8

const (
	// EmitDefault: no EMIT clause.
	EmitDefault EmitMode = iota
	// EmitChanges: a windowed view shows each window as records arrive.
	EmitChanges
	// EmitFinal: a windowed view shows each window once it has closed.
	EmitFinal
)

// streamWindowStarts reports whether the WINDOW at toks[k] starts
// ksqlDB's window clause rather than SQL's named windows.
func (sp *stmtParser) streamWindowStarts(k int) bool {
	toks := sp.toks
	kind := toks[k+1]
	return kind.kind == tokIdent && (kind.val == "tumbling" || kind.val == "hopping" || kind.val == "session") &&
		toks[k+2].isOp("(")
}

// windowDurationHint is the hint of an error in a WINDOW clause.
const windowDurationHint = "Write the window as WINDOW TUMBLING (SIZE 1 MINUTE), WINDOW HOPPING (SIZE 1 HOUR, ADVANCE BY 10 MINUTES) or WINDOW SESSION (30 MINUTES), each optionally with RETENTION <duration> and GRACE PERIOD <duration>; a duration is a whole number of MILLISECONDS, SECONDS, MINUTES, HOURS or DAYS."

// streamWindow parses the window clause at toks[k] (WINDOW) and marks
// its tokens in skip; it returns the index after its closing
// parenthesis.
func (sp *stmtParser) streamWindow(k int, skip map[int]bool) (*StreamWindow, int, error) {
	toks := sp.toks
	w := &StreamWindow{Pos: sp.charPos(toks[k].pos)}
	switch toks[k+1].val {
	case "tumbling":
		w.Kind = WindowTumbling
	case "hopping":
		w.Kind = WindowHopping
	default:
		w.Kind = WindowSession
	}
	close := sp.matchParen(k + 2)
	if close >= len(toks)-1 {
		return nil, 0, sp.syntaxErr(toks[len(toks)-1])
	}
	dur := func(j int) (time.Duration, int, error) {
		if toks[j].isOp("-") {
			return 0, j, sp.syntaxErr(toks[j]).WithHint("A window's durations are not negative.")
		}
		d, next, err := sp.duration(j)
		if err != nil {
			if e, ok := pgerr.As(err); ok && e.Code == pgerr.SyntaxError {
				e.Hint = windowDurationHint
			}
		}
		return d, next, err
	}
	j := k + 3
	var err error
	if w.Kind == WindowSession {
		if w.Size, j, err = dur(j); err != nil {
			return nil, 0, err
		}
	} else {
		if !toks[j].isWord("size") {
			return nil, 0, sp.syntaxErr(toks[j]).WithHint(windowDurationHint)
		}
		if w.Size, j, err = dur(j + 1); err != nil {
			return nil, 0, err
		}
		if w.Kind == WindowHopping {
			if !toks[j].isOp(",") || !toks[j+1].isWord("advance") || !toks[j+2].isWord("by") {
				return nil, 0, sp.syntaxErr(toks[j]).WithHint("A hopping window needs its step: WINDOW HOPPING (SIZE 1 HOUR, ADVANCE BY 10 MINUTES).")
			}
			if w.Advance, j, err = dur(j + 3); err != nil {
				return nil, 0, err
			}
		}
	}
	for j < close {
		if !toks[j].isOp(",") {
			return nil, 0, sp.syntaxErr(toks[j]).WithHint(windowDurationHint)
		}
		j++
		switch {
		case toks[j].isWord("retention") && !w.HasRetention:
			if w.Retention, j, err = dur(j + 1); err != nil {
				return nil, 0, err
			}
			w.HasRetention = true
		case toks[j].isWord("grace") && toks[j+1].isWord("period") && !w.HasGrace:
			if w.Grace, j, err = dur(j + 2); err != nil {
				return nil, 0, err
			}
			w.HasGrace = true
		default:
			return nil, 0, sp.syntaxErr(toks[j]).WithHint(windowDurationHint)
		}
	}
	if j != close {
		return nil, 0, sp.syntaxErr(toks[j]).WithHint(windowDurationHint)
	}
	for i := k; i <= close; i++ {
		skip[i] = true
	}
	return w, close + 1, nil
}

// streamWindow writes a window clause as streamWindow parses it.
func (f *formatter) streamWindow(w *StreamWindow) {
	f.b.WriteString(" WINDOW")
	f.pos(w.Pos)
	f.printf(" %s (", w.Kind)
	switch w.Kind {
	case WindowSession:
		f.b.WriteString(formatDuration(w.Size))
	case WindowHopping:
		f.printf("SIZE %s, ADVANCE BY %s", formatDuration(w.Size), formatDuration(w.Advance))
	default:
		f.printf("SIZE %s", formatDuration(w.Size))
	}
	if w.HasRetention {
		f.printf(", RETENTION %s", formatDuration(w.Retention))
	}
	if w.HasGrace {
		f.printf(", GRACE PERIOD %s", formatDuration(w.Grace))
	}
	f.b.WriteString(")")
}
