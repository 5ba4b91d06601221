package materialize

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestPositionAdvanceCovers(t *testing.T) {
	p := make(Position)
	p.Advance("orders", 0, 10)
	p.Advance("orders", 0, 7) // older marker: no effect
	p.Advance("orders", 1, 3)
	if got, _ := p.Get("orders", 0); got != 10 {
		t.Fatalf("Advance kept %d, want the max 10", got)
	}
	if _, ok := p.Get("orders", 2); ok {
		t.Fatalf("Get of a partition never advanced reports ok")
	}
	cases := []struct {
		other Position
		want  bool
	}{
		{nil, true},
		{Position{}, true},
		{Position{"orders": {0: 10}}, true},
		{Position{"orders": {0: 11}}, false},
		{Position{"orders": {0: 5, 1: 3}}, true},
		{Position{"orders": {1: 4}}, false},
		// A partition p has not seen counts as 0: covered only at 0.
		{Position{"orders": {2: 0}}, true},
		{Position{"orders": {2: 1}}, false},
		{Position{"customers": {0: 0}}, true},
		{Position{"customers": {0: 1}}, false},
	}
	for _, c := range cases {
		if got := p.Covers(c.other); got != c.want {
			t.Errorf("%s covers %s: got %v, want %v", p.Describe(), c.other.Describe(), got, c.want)
		}
	}
	var empty Position
	if !empty.Covers(Position{"x": {0: 0}}) || empty.Covers(Position{"x": {0: 1}}) {
		t.Errorf("nil position: wrong Covers")
	}
	if lag := (Position{"orders": {0: 4}}).Behind(Position{"orders": {0: 10, 1: 2}, "c": {0: 1}}); lag != 6+2+1 {
		t.Errorf("Behind = %d, want 9", lag)
	}
	if lag := p.Behind(Position{"orders": {0: 4}}); lag != 0 {
		t.Errorf("Behind a covered target = %d, want 0", lag)
	}
}

func TestPositionMergeCloneEqual(t *testing.T) {
	a := Position{"t": {0: 5, 1: 9}}
	c := a.Clone()
	a.Merge(Position{"t": {0: 7, 1: 2}, "u": {3: 1}})
	want := Position{"t": {0: 7, 1: 9}, "u": {3: 1}}
	if !a.Equal(want) {
		t.Fatalf("Merge: got %s, want %s", a.Describe(), want.Describe())
	}
	if !c.Equal(Position{"t": {0: 5, 1: 9}}) {
		t.Fatalf("Clone shares storage with the original: %s", c.Describe())
	}
	for _, ne := range []Position{
		{"t": {0: 7, 1: 9}},
		{"t": {0: 7, 1: 9}, "u": {3: 2}},
		{"t": {0: 7, 1: 9}, "u": {4: 1}},
		{"t": {0: 7, 1: 9}, "u": {3: 1}, "v": {0: 0}},
	} {
		if a.Equal(ne) || ne.Equal(a) {
			t.Errorf("%s equals %s", a.Describe(), ne.Describe())
		}
	}
}

func TestPositionToken(t *testing.T) {
	g := newValueGen(t)
	for range 500 {
		p := make(Position)
		for range g.r.IntN(6) {
			topic := g.value(kindString).(string)
			p.Advance(topic, int32(g.r.Int64N(1<<32)-1<<31), g.r.Int64N(math.MaxInt64))
		}
		tok := p.String()
		got, err := ParsePosition(tok)
		if err != nil {
			t.Fatalf("ParsePosition(%q) for %s: %v", tok, p.Describe(), err)
		}
		if !got.Equal(p) {
			t.Fatalf("token %q: got %s, want %s", tok, got.Describe(), p.Describe())
		}
		if again := p.Clone().String(); again != tok {
			t.Fatalf("equal positions give different tokens %q and %q", tok, again)
		}
	}
	p := Position{"orders": {0: 12, 1: 7}}
	if d := p.Describe(); d != "orders/0:12 orders/1:7" {
		t.Errorf("Describe = %q", d)
	}
	if got, err := ParsePosition(""); err != nil || len(got) != 0 || got == nil {
		t.Errorf(`ParsePosition("") = %v, %v; want an empty position`, got, err)
	}
	for _, bad := range []string{"!!!", "AA", "Ag", p.String() + "AA", p.String()[:len(p.String())-2]} {
		if _, err := ParsePosition(bad); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("ParsePosition(%q): got %v, want ErrBadEncoding", bad, err)
		}
	}
}

// TestTopicTokens checks that TopicTokens makes Position.String's tokens.
func TestTopicTokens(t *testing.T) {
	g := newValueGen(t)
	for range 200 {
		topic := g.value(kindString).(string)
		var parts []int32
		for range 1 + g.r.IntN(8) {
			parts = append(parts, int32(g.r.Int64N(1<<32)-1<<31))
		}
		tt := NewTopicTokens(topic, parts)
		for range 5 {
			offs := map[int32]int64{}
			for _, p := range parts {
				offs[p] = g.r.Int64N(math.MaxInt64)
			}
			if got, want := tt.Token(offs), (Position{topic: offs}).String(); got != want {
				t.Fatalf("TopicTokens gives %q for %v of %q, Position.String %q", got, offs, topic, want)
			}
		}
	}
}

func FuzzParsePosition(f *testing.F) {
	f.Add("")
	f.Add(Position{"orders": {0: 12, 1: 7}, "c": {3: 0}}.String())
	f.Fuzz(func(t *testing.T, tok string) {
		p, err := ParsePosition(tok)
		if err != nil {
			return
		}
		again, err := ParsePosition(p.String())
		if err != nil || !again.Equal(p) {
			t.Fatalf("token %q: %s does not round-trip: %v", tok, p.Describe(), err)
		}
	})
}

func TestCheckpointCodec(t *testing.T) {
	cps := []Checkpoint{
		{},
		{ChangelogOffset: 42},
		{
			ChangelogOffset: 1 << 40,
			Input:           map[string]map[int32]int64{"_basin_repartition_v": {0: 5, 7: 9}},
			Position:        Position{"orders": {0: 100, 1: 0}, "customers": {2: 3}},
			UpdatedAt:       time.Unix(1700000000, 123456789).UTC(),
		},
		{UpdatedAt: time.Unix(-5, 1).UTC()},
	}
	for _, cp := range cps {
		got, err := decodeCheckpoint(encodeCheckpoint(nil, cp))
		if err != nil {
			t.Fatalf("%+v: %v", cp, err)
		}
		checkpointsEqual(t, got, cp)
		// The exported form (changelog position markers) is the same codec.
		got, err = UnmarshalCheckpoint(MarshalCheckpoint(cp))
		if err != nil {
			t.Fatal(err)
		}
		checkpointsEqual(t, got, cp)
	}
	if got, want := cps[2].String(), "changelog=1099511627776 input=[_basin_repartition_v/0:5 _basin_repartition_v/7:9] position=[customers/2:3 orders/0:100 orders/1:0] updated=2023-11-14T22:13:20.123456789Z"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	enc := encodeCheckpoint(nil, cps[2])
	for i := range enc {
		if _, err := decodeCheckpoint(enc[:i]); !errors.Is(err, ErrBadEncoding) {
			t.Fatalf("truncated checkpoint (%d of %d bytes): got %v, want ErrBadEncoding", i, len(enc), err)
		}
	}
	if _, err := decodeCheckpoint(append(enc, 0)); !errors.Is(err, ErrBadEncoding) {
		t.Fatalf("checkpoint with trailing bytes: got %v", err)
	}
}

func checkpointsEqual(t *testing.T, got, want Checkpoint) {
	t.Helper()
	if got.ChangelogOffset != want.ChangelogOffset ||
		!Position(got.Input).Equal(Position(want.Input)) ||
		!got.Position.Equal(want.Position) ||
		!got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("checkpoint: got {%d in=%s pos=%s at=%v}, want {%d in=%s pos=%s at=%v}",
			got.ChangelogOffset, Position(got.Input).Describe(), got.Position.Describe(), got.UpdatedAt,
			want.ChangelogOffset, Position(want.Input).Describe(), want.Position.Describe(), want.UpdatedAt)
	}
}

func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(encodeCheckpoint(nil, Checkpoint{ChangelogOffset: 3, Position: Position{"a": {0: 1}}, UpdatedAt: time.Unix(1, 2)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		cp, err := decodeCheckpoint(b)
		if err != nil {
			return
		}
		again, err := decodeCheckpoint(encodeCheckpoint(nil, cp))
		if err != nil {
			t.Fatal(err)
		}
		checkpointsEqual(t, again, cp)
	})
}
