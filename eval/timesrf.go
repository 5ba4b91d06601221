package eval

import (
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// timeSeries is generate_series(start, stop, step) over TIMESTAMP or
// TIMESTAMPTZ: start, start + step, ... while not past stop. Adding the
// step to a TIMESTAMPTZ keeps the wall clock across daylight saving
// changes in the session's zone (loc), as Postgres does.
func timeSeries(args []any, types []catalog.Type, loc *time.Location) ([]any, error) {
	from, to := args[0].(time.Time), args[1].(time.Time)
	step := args[2].(catalog.IntervalVal)
	if step.Span() == 0 {
		return nil, pgerr.New(pgerr.InvalidParameterValue, "step size cannot equal zero")
	}
	up := step.Span() > 0
	t := types[0]
	var out []any
	for v := from; up && !v.After(to) || !up && !v.Before(to); {
		if len(out) >= maxSRFRows {
			return nil, pgerr.New(pgerr.ProgramLimitExceeded, "generate_series over catalog queries is limited to %d rows", maxSRFRows)
		}
		out = append(out, v)
		next, err := DatetimeOp("+", t, v, step, loc)
		if err != nil {
			return nil, err
		}
		v = next.(time.Time)
	}
	return out, nil
}
