package eval

import (
	"strconv"
	"strings"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/numeric"
	"github.com/basindb/basin/planner"
	"github.com/cockroachdb/apd/v3"
)

// extractNumeric is EXTRACT(field FROM x): date_part's value as a
// NUMERIC, as Postgres 14 and later give it, with Postgres's scales:
// epoch and second to the microsecond (6 places; a date's epoch is
// whole), milliseconds to 3, the other fields whole. The fractional
// fields are computed from the value's microseconds, exactly, rather
// than from date_part's double.
func extractNumeric(env *Env, c *planner.Call, a []any) (any, error) {
	f, err := datePartAny(env, c, a)
	if f == nil || err != nil {
		return f, err
	}
	field := strings.ToLower(a[0].(string))
	scale := 0
	switch field {
	case "epoch", "second", "seconds":
		scale = 6
		if _, ok := a[1].(catalog.DateVal); ok {
			scale = 0
		}
	case "millisecond", "milliseconds":
		scale = 3
	case "julian":
		return numeric.Parse(strconv.FormatFloat(f.(float64), 'f', -1, 64))
	}
	if scale > 0 {
		if us, ok := exactMicros(field, a[1]); ok {
			// us microseconds, shown with scale places: the coefficient
			// counts units of 10^-6, which milliseconds show to 10^-3.
			d := apd.New(us, -6)
			if scale == 3 {
				d = apd.New(us, -3)
			}
			return d, nil
		}
	}
	return numeric.Parse(strconv.FormatFloat(f.(float64), 'f', scale, 64))
}

// exactMicros is the microseconds a fractional field of v counts: all
// of them for epoch, those of the current minute for second and
// milliseconds.
func exactMicros(field string, v any) (int64, bool) {
	var epoch, inMinute int64
	switch x := v.(type) {
	case time.Time:
		epoch = x.UnixMicro()
		inMinute = int64(x.Second())*1e6 + int64(x.Nanosecond()/1000)
	case catalog.TimeOfDay:
		epoch = int64(x)
		inMinute = int64(x) % 60_000_000
	case catalog.IntervalVal:
		if field == "epoch" {
			return 0, false // months count as 365.25/12 days: date_part's double
		}
		inMinute = x.Micros % 60_000_000
	default:
		return 0, false
	}
	if field == "epoch" {
		return epoch, true
	}
	return inMinute, true
}
