package query

import (
	"strconv"
	"strings"

	"github.com/basindb/basin/catalog"
)

// appendDatetimeKey is appendKey for DATE, TIME and INTERVAL values; ok
// is false for other Go types. An interval's key is its span (a month as
// 30 days, a day as 24 hours), so that intervals Postgres holds equal
// ('1 mon' and '30 days') group together.
func appendDatetimeKey(b *strings.Builder, v any) bool {
	var tag byte
	var n int64
	switch x := v.(type) {
	case catalog.DateVal:
		tag, n = 'D', int64(x)
	case catalog.TimeOfDay:
		tag, n = 'H', int64(x)
	case catalog.IntervalVal:
		tag, n = 'I', x.Span()
	default:
		return false
	}
	b.WriteByte(tag)
	b.WriteString(strconv.FormatInt(n, 10))
	b.WriteByte(';')
	return true
}
