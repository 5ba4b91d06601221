package serde

import (
	"testing"
	"time"
)

func TestTimeLayout(t *testing.T) {
	for _, c := range []struct {
		pattern, value string
		want           string // RFC 3339 in UTC, or "error" for a bad pattern
	}{
		{"yyyy-MM-dd HH:mm:ss", "2024-05-06 07:08:09", "2024-05-06T07:08:09Z"},
		{"yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2024-05-06T07:08:09.123+02:00", "2024-05-06T05:08:09.123Z"},
		{"yyyy-MM-dd'T'HH:mm:ss.SSSX", "2024-05-06T07:08:09.500Z", "2024-05-06T07:08:09.5Z"},
		{"dd/MM/yy hh:mm a", "06/05/24 07:08 PM", "2024-05-06T19:08:00Z"},
		{"yyyyMMddHHmmssZ", "20240506070809-0100", "2024-05-06T08:08:09Z"},
		{"EEE, d MMM yyyy", "Mon, 6 May 2024", "2024-05-06T00:00:00Z"},
		{"yyyy-MM-dd''HH", "2024-05-06'07", "2024-05-06T07:00:00Z"},
		{"yyyy-MM-dd Q", "", "error"},
		{"yyyy-MM-dd'T", "", "error"},
		{"yyyyMMddHHmmssSSS", "", "error"}, // a fraction without its point
		{"yyyy 12", "", "error"},
	} {
		layout, err := TimeLayout(c.pattern)
		if c.want == "error" {
			if err == nil {
				t.Errorf("%q: layout %q, want an error", c.pattern, layout)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.pattern, err)
			continue
		}
		got, err := time.Parse(layout, c.value)
		if err != nil {
			t.Errorf("%q (layout %q): %q does not parse: %v", c.pattern, layout, c.value, err)
			continue
		}
		if s := got.UTC().Format(time.RFC3339Nano); s != c.want {
			t.Errorf("%q: %q is %s, want %s", c.pattern, c.value, s, c.want)
		}
	}
}
