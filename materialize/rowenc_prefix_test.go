package materialize

import (
	"reflect"
	"testing"
)

// TestDecodeRowPrefix decodes the leading values of a row only, and all
// of them when the row has fewer; the bytes after them are not checked.
func TestDecodeRowPrefix(t *testing.T) {
	row := []any{true, int64(7), "eu", 1.5, nil}
	b, err := EncodeRow(row)
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{0, 1, 3, 5, 9} {
		got, err := DecodeRowPrefix(nil, b, limit)
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		want := row[:min(limit, len(row))]
		if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Errorf("limit %d: %v, want %v", limit, got, want)
		}
	}
	if _, err := DecodeRowPrefix(nil, b[:len(b)-3], 5); err == nil {
		t.Error("a truncated row decoded")
	}
}
