package ha

import (
	"bytes"
	"errors"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/basindb/basin/materialize"
)

func sampleJoin() JoinMetadata {
	return JoinMetadata{
		NodeID: "n1", PGAddr: "10.0.0.1:5433", HTTPAddr: "10.0.0.1:8433", RejoinEpoch: 3,
		Offsets: map[materialize.StoreID]int64{
			{View: "revenue@42", Partition: 0}: 1234, {View: "revenue@42", Partition: 3}: 0, {View: "orders@7", Partition: 1}: 1 << 40,
		},
	}
}

func sampleAssignment() Assignment {
	r := rand.New(rand.NewPCG(7, 7))
	c := randomCluster(r)
	randomState(r, c)
	a := Assign(c.input())
	a.Leader = "n0"
	for id, nt := range a.Nodes {
		nt.JoinDigest = digest([]byte(id))
		a.Nodes[id] = nt
	}
	return a
}

func TestJoinMetadataRoundTrip(t *testing.T) {
	m := sampleJoin()
	b := m.AppendTo(nil)
	got, err := DecodeJoinMetadata(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.NodeID != m.NodeID || got.PGAddr != m.PGAddr || got.HTTPAddr != m.HTTPAddr ||
		got.RejoinEpoch != m.RejoinEpoch || !maps.Equal(got.Offsets, m.Offsets) {
		t.Fatalf("round trip: got %+v, want %+v", got, m)
	}
	// Canonical: the same metadata built in another order encodes to
	// the same bytes (the broker compares them).
	m2 := m
	m2.Offsets = map[materialize.StoreID]int64{}
	for _, k := range []materialize.StoreID{{View: "orders@7", Partition: 1}, {View: "revenue@42", Partition: 3}, {View: "revenue@42", Partition: 0}} {
		m2.Offsets[k] = m.Offsets[k]
	}
	if !bytes.Equal(m2.AppendTo(nil), b) {
		t.Fatal("encoding depends on map order")
	}
	// Through the consumer protocol envelope.
	got, err = DecodeGroupMetadata(EncodeGroupMetadata("_basin-members", m))
	if err != nil || !maps.Equal(got.Offsets, m.Offsets) || got.NodeID != m.NodeID {
		t.Fatalf("envelope round trip: %+v, %v", got, err)
	}
	// No state at all.
	empty := JoinMetadata{NodeID: "x"}
	if got, err := DecodeJoinMetadata(empty.AppendTo(nil)); err != nil || got.NodeID != "x" || len(got.Offsets) != 0 {
		t.Fatalf("empty: %+v, %v", got, err)
	}
}

func TestAssignmentRoundTrip(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 9))
		c := randomCluster(r)
		randomState(r, c)
		a := Assign(c.input())
		a.Leader = "n0"
		a.Generation = int32(seed) - 25
		b := a.AppendTo(nil)
		got, err := DecodeAssignment(b)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !got.Equal(&a) {
			t.Fatalf("seed %d: round trip differs:\n%s\n%s", seed, dump(a), dump(got))
		}
		env, err := DecodeGroupAssignment(EncodeGroupAssignment(&a))
		if err != nil || !env.Equal(&a) {
			t.Fatalf("seed %d: envelope round trip: %v", seed, err)
		}
	}
}

func TestDecodeGarbage(t *testing.T) {
	join := sampleJoin()
	jb := join.AppendTo(nil)
	asg := sampleAssignment()
	ab := asg.AppendTo(nil)
	// Every strict prefix is an error, never a panic.
	for i := range len(jb) {
		if _, err := DecodeJoinMetadata(jb[:i]); err == nil {
			t.Fatalf("join prefix %d/%d decoded", i, len(jb))
		}
	}
	for i := range len(ab) {
		if _, err := DecodeAssignment(ab[:i]); err == nil {
			t.Fatalf("assignment prefix %d/%d decoded", i, len(ab))
		}
	}
	// Version 0 is not a version.
	bad := append([]byte{0}, jb[1:]...)
	if _, err := DecodeJoinMetadata(bad); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("version 0: %v", err)
	}
	// A later version that appended fields still decodes.
	later := append([]byte{2}, jb[1:]...)
	later = append(later, 0xde, 0xad)
	if got, err := DecodeJoinMetadata(later); err != nil || !maps.Equal(got.Offsets, join.Offsets) {
		t.Fatalf("version 2 with trailing fields: %v", err)
	}
	// Random bit flips: errors or valid values, never panics.
	r := rand.New(rand.NewPCG(1, 1))
	for range 2000 {
		for _, src := range [][]byte{jb, ab} {
			b := bytes.Clone(src)
			for range 1 + r.IntN(4) {
				b[r.IntN(len(b))] ^= byte(1 << r.IntN(8))
			}
			_, _ = DecodeJoinMetadata(b)
			_, _ = DecodeAssignment(b)
		}
	}
	if _, err := DecodeGroupMetadata([]byte{1, 2, 3}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("envelope garbage: %v", err)
	}
	if _, err := DecodeGroupAssignment(nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("empty assignment: %v", err)
	}
}

// FuzzDecode feeds arbitrary bytes to every decoder: they must return an
// error or a value that re-encodes to an equal value, never panic.
func FuzzDecode(f *testing.F) {
	join := sampleJoin()
	f.Add(join.AppendTo(nil))
	f.Add(EncodeGroupMetadata("_basin-members", join))
	asg := sampleAssignment()
	f.Add(asg.AppendTo(nil))
	f.Add(EncodeGroupAssignment(&asg))
	small := Assign(AssignInput{Members: []Member{{ID: "a"}, {ID: "b"}}, Tasks: []Task{{ID: materialize.StoreID{View: "v", Partition: 0}, Standbys: 2}}})
	f.Add(small.AppendTo(nil))
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := DecodeJoinMetadata(b); err == nil {
			again, err := DecodeJoinMetadata(m.AppendTo(nil))
			if err != nil || again.NodeID != m.NodeID || again.PGAddr != m.PGAddr || again.HTTPAddr != m.HTTPAddr ||
				again.RejoinEpoch != m.RejoinEpoch || !maps.Equal(again.Offsets, m.Offsets) {
				t.Fatalf("join metadata does not round-trip: %+v vs %+v (%v)", m, again, err)
			}
		}
		if a, err := DecodeAssignment(b); err == nil {
			again, err := DecodeAssignment(a.AppendTo(nil))
			if err != nil || !again.Equal(&a) {
				t.Fatalf("assignment does not round-trip: %v", err)
			}
		}
		_, _ = DecodeGroupMetadata(b)
		_, _ = DecodeGroupAssignment(b)
	})
}
