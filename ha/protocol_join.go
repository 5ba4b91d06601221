package ha

import (
	"maps"
	"slices"
	"strings"

	"github.com/basindb/basin/materialize"
)

// JoinMetadata is what a node tells the group leader when it joins: who
// it is, where to reach it and which state it has on disk.
//
// Version 1 layout (see protocol.go for the primitives):
//
//	version      byte (1)
//	node id      string
//	pg address   string
//	http address string
//	rejoin epoch uvarint
//	views        count, then per view in order:
//	  view       string
//	  partitions count, then per partition in order:
//	    partition varint
//	    offset    varint
//
// The encoding is canonical (views and partitions strictly ascending), so
// equal metadata encodes to equal bytes: the broker compares a rejoining
// member's bytes to decide whether to rebalance.
type JoinMetadata struct {
	NodeID, PGAddr, HTTPAddr string
	// RejoinEpoch changes when the node asks for a rebalance
	// (Balancer.RequestRebalance): a member whose metadata changed makes
	// the broker rebalance when it rejoins, even if it is not the
	// leader.
	RejoinEpoch uint64
	// Offsets holds the checkpointed changelog offset of each task the
	// node has on disk, as Member.Offsets.
	Offsets map[materialize.StoreID]int64
}

// AppendTo appends the encoding of m to b.
func (m *JoinMetadata) AppendTo(b []byte) []byte {
	e := &encoder{b: b}
	e.byte(protocolVersion)
	e.str(m.NodeID)
	e.str(m.PGAddr)
	e.str(m.HTTPAddr)
	e.uvarint(m.RejoinEpoch)
	ids := slices.SortedFunc(maps.Keys(m.Offsets), materialize.StoreID.Compare)
	// Count the views first.
	views := 0
	for i, t := range ids {
		if i == 0 || ids[i-1].View != t.View {
			views++
		}
	}
	e.count(views)
	for i := 0; i < len(ids); {
		k := i
		for k < len(ids) && ids[k].View == ids[i].View {
			k++
		}
		e.str(ids[i].View)
		e.count(k - i)
		for _, t := range ids[i:k] {
			e.varint(int64(t.Partition))
			e.varint(m.Offsets[t])
		}
		i = k
	}
	return e.bytes()
}

// DecodeJoinMetadata decodes join metadata encoded by AppendTo.
func DecodeJoinMetadata(b []byte) (JoinMetadata, error) {
	d := &decoder{b: b}
	var m JoinMetadata
	d.version("join metadata")
	m.NodeID = d.str()
	m.PGAddr = d.str()
	m.HTTPAddr = d.str()
	m.RejoinEpoch = d.uvarint()
	nViews := d.count(2)
	prevView := ""
	for v := range nViews {
		view := d.str()
		if v > 0 && strings.Compare(prevView, view) >= 0 {
			d.fail("views not in ascending order at %q", view)
		}
		prevView = view
		nParts := d.count(2)
		var lastPart int32
		for p := range nParts {
			part := d.int32()
			off := d.varint()
			if d.err != nil {
				break
			}
			if p > 0 && part <= lastPart {
				d.fail("partitions of %q not in ascending order at %d", view, part)
				break
			}
			lastPart = part
			if m.Offsets == nil {
				m.Offsets = make(map[materialize.StoreID]int64)
			}
			m.Offsets[materialize.StoreID{View: view, Partition: part}] = off
		}
		if d.err != nil {
			break
		}
	}
	if d.err != nil {
		return JoinMetadata{}, d.err
	}
	return m, nil
}
