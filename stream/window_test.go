package stream

import (
	"slices"
	"testing"

	"github.com/basindb/basin/catalog"
)

// TestWindowStarts checks the windows a time falls in, counted from the
// epoch or from an offset (a date bucket's: ISO weeks from a Monday,
// date_bin's origin), before the epoch too.
func TestWindowStarts(t *testing.T) {
	const day = 86_400_000
	for _, c := range []struct {
		w    catalog.Window
		ts   int64
		want []int64
	}{
		{catalog.Window{Kind: catalog.WindowTumbling, Size: 60_000}, 119_999, []int64{60_000}},
		{catalog.Window{Kind: catalog.WindowTumbling, Size: 60_000}, -1, []int64{-60_000}},
		{catalog.Window{Kind: catalog.WindowHopping, Size: 60_000, Advance: 30_000}, 60_000, []int64{30_000, 60_000}},
		// 1970-01-01, a Thursday, is in the week of Monday 1969-12-29;
		// 1970-01-05 starts the next.
		{catalog.Window{Kind: catalog.WindowTumbling, Size: 7 * day, Offset: 4 * day}, 0, []int64{-3 * day}},
		{catalog.Window{Kind: catalog.WindowTumbling, Size: 7 * day, Offset: 4 * day}, 4*day - 1, []int64{-3 * day}},
		{catalog.Window{Kind: catalog.WindowTumbling, Size: 7 * day, Offset: 4 * day}, 4 * day, []int64{4 * day}},
		{catalog.Window{Kind: catalog.WindowTumbling, Size: 900_000, Offset: 420_000}, 419_999, []int64{-480_000}},
		{catalog.Window{Kind: catalog.WindowTumbling, Size: 900_000, Offset: 420_000}, 420_000, []int64{420_000}},
		{catalog.Window{Kind: catalog.WindowTumbling, Size: 900_000, Offset: 420_000}, -900_001, []int64{-1_380_000}},
	} {
		w := newWindower(&c.w, 0, 1, 0)
		if got := w.starts(nil, c.ts); !slices.Equal(got, c.want) {
			t.Errorf("%+v at %d: windows start at %v, want %v", c.w, c.ts, got, c.want)
		}
	}
}
