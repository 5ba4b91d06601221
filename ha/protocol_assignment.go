package ha

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/basindb/basin/materialize"
)

// The assignment user data: the whole map, sent to every member.
//
// Version 1 layout (see protocol.go for the primitives):
//
//	version     byte (1)
//	generation  varint
//	leader      string
//	flags       byte: bit 0 NeedsFollowUp
//	views       count, then each view name (strictly ascending); tasks
//	            below refer to a view by its index in this table
//	nodes       count, then per node in ascending id order:
//	  id, pg address, http address  string
//	  join digest                    8 bytes, big-endian
//	  active, standby, warm-up       each: count, then per task
//	                                 (view index uvarint, partition varint)
//	shortfall   count, then per entry in task order:
//	            view index uvarint, partition varint, standbys uvarint
//
// A task is two or three bytes, so the map of a few thousand tasks stays
// well below Kafka's message size limits even though SyncGroup carries a
// copy per member.

const flagFollowUp = 1 << 0

// AppendTo appends the encoding of a to b.
func (a *Assignment) AppendTo(b []byte) []byte {
	e := &encoder{b: b}
	e.byte(protocolVersion)
	e.varint(int64(a.Generation))
	e.str(a.Leader)
	var flags byte
	if a.NeedsFollowUp {
		flags |= flagFollowUp
	}
	e.byte(flags)

	viewSet := make(map[string]struct{})
	for _, nt := range a.Nodes {
		for _, l := range [][]materialize.StoreID{nt.Active, nt.Standby, nt.Warmup} {
			for _, t := range l {
				viewSet[t.View] = struct{}{}
			}
		}
	}
	for t := range a.Shortfall {
		viewSet[t.View] = struct{}{}
	}
	views := slices.Sorted(maps.Keys(viewSet))
	viewIdx := make(map[string]uint64, len(views))
	e.count(len(views))
	for i, v := range views {
		viewIdx[v] = uint64(i)
		e.str(v)
	}
	task := func(t materialize.StoreID) {
		e.uvarint(viewIdx[t.View])
		e.varint(int64(t.Partition))
	}
	list := func(ts []materialize.StoreID) {
		ts = slices.Clone(ts)
		materialize.SortStoreIDs(ts)
		e.count(len(ts))
		for _, t := range ts {
			task(t)
		}
	}
	ids := a.nodeIDs()
	e.count(len(ids))
	for _, id := range ids {
		nt := a.Nodes[id]
		e.str(id)
		e.str(nt.PGAddr)
		e.str(nt.HTTPAddr)
		e.u64(nt.JoinDigest)
		list(nt.Active)
		list(nt.Standby)
		list(nt.Warmup)
	}
	short := slices.SortedFunc(maps.Keys(a.Shortfall), materialize.StoreID.Compare)
	e.count(len(short))
	for _, t := range short {
		task(t)
		e.uvarint(uint64(max(a.Shortfall[t], 0)))
	}
	return e.bytes()
}

// DecodeAssignment decodes assignment user data encoded by AppendTo and
// checks its structural invariants (Assignment.Check).
func DecodeAssignment(b []byte) (Assignment, error) {
	d := &decoder{b: b}
	a := Assignment{Nodes: map[string]NodeTasks{}, Shortfall: map[materialize.StoreID]int{}}
	d.version("assignment")
	a.Generation = d.int32()
	a.Leader = d.str()
	flags := d.byte()
	a.NeedsFollowUp = flags&flagFollowUp != 0

	nViews := d.count(1)
	views := make([]string, 0, nViews)
	for i := range nViews {
		v := d.str()
		if i > 0 && strings.Compare(views[i-1], v) >= 0 {
			d.fail("view table not in ascending order at %q", v)
		}
		views = append(views, v)
		if d.err != nil {
			break
		}
	}
	task := func() materialize.StoreID {
		vi := d.uvarint()
		p := d.int32()
		if d.err == nil && vi >= uint64(len(views)) {
			d.fail("view index %d out of %d views", vi, len(views))
		}
		if d.err != nil {
			return materialize.StoreID{}
		}
		return materialize.StoreID{View: views[vi], Partition: p}
	}
	list := func() []materialize.StoreID {
		n := d.count(2)
		if n == 0 {
			return nil
		}
		ts := make([]materialize.StoreID, 0, n)
		for range n {
			t := task()
			if d.err != nil {
				return nil
			}
			ts = append(ts, t)
		}
		return ts
	}
	nNodes := d.count(8 + 6)
	prevID := ""
	for k := range nNodes {
		id := d.str()
		if d.err == nil && k > 0 && strings.Compare(prevID, id) >= 0 {
			d.fail("nodes not in ascending order at %q", id)
		}
		prevID = id
		var nt NodeTasks
		nt.PGAddr = d.str()
		nt.HTTPAddr = d.str()
		nt.JoinDigest = d.u64()
		nt.Active = list()
		nt.Standby = list()
		nt.Warmup = list()
		if d.err != nil {
			break
		}
		a.Nodes[id] = nt
	}
	nShort := d.count(3)
	for range nShort {
		t := task()
		n := d.uvarint()
		if d.err == nil && (n == 0 || n > math.MaxInt32) {
			d.fail("shortfall %d for %s", n, t)
		}
		if d.err != nil {
			break
		}
		if _, dup := a.Shortfall[t]; dup {
			d.fail("shortfall for %s twice", t)
			break
		}
		a.Shortfall[t] = int(n)
	}
	if d.err != nil {
		return Assignment{}, d.err
	}
	if err := a.Check(); err != nil {
		return Assignment{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return a, nil
}
