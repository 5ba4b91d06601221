package stream

// Stage position markers: how positions pass through the internal
// streams of joins of streams (see planner.Marks).

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/planner"
)

// headerStage marks a stage position marker: a record without key that a
// task writing a join stage's stream or a join's repartition topic puts
// on every partition of it, in each batch's transaction after the
// batch's records. The header's value is the writer's partition (four
// bytes); the record's value is a checkpoint holding the writer's
// position. A reader composes the markers (noteMarked, marked) and
// skips them as records.
const headerStage = "basin.stage"

// appendStageMarkers appends to dst a stage marker of writer w with
// position pos for each of the partitions of topic; right marks them as
// a stream–stream join's right stream's (headerRight), as the records
// of that side are.
func appendStageMarkers(dst []*kgo.Record, topic string, partitions, w int32, right bool, pos materialize.Position) []*kgo.Record {
	val := materialize.MarshalCheckpoint(materialize.Checkpoint{Position: pos})
	id := binary.BigEndian.AppendUint32(nil, uint32(w))
	for q := int32(0); q < partitions; q++ {
		r := &kgo.Record{Topic: topic, Partition: q, Value: val, Headers: []kgo.RecordHeader{{Key: headerStage, Value: id}}}
		if right {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: headerRight})
		}
		dst = append(dst, r)
	}
	return dst
}

// stageMarker decodes r if it is a stage marker (ok): its writer and
// that writer's position.
func stageMarker(r *kgo.Record) (w int32, pos materialize.Position, ok bool, err error) {
	id, ok := hasHeader(r, headerStage)
	if !ok {
		return 0, nil, false, nil
	}
	if len(id) != 4 {
		return 0, nil, true, fmt.Errorf("stage marker at %s/%d@%d: writer of %d bytes", r.Topic, r.Partition, r.Offset, len(id))
	}
	cp, err := materialize.UnmarshalCheckpoint(r.Value)
	if err != nil {
		return 0, nil, true, fmt.Errorf("stage marker at %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	return int32(binary.BigEndian.Uint32(id)), cp.Position, true, nil
}

// Tags of marked inputs in a task's checkpoint (noteMarked): a joined
// stream's or a routing stage's (a join's stream side, or a view of a
// stream's join), and a view's changelog read as a join's table.
const (
	markedStream = "stream"
	markedTable  = "table"
	markedRight  = "right"
)

// markedName names, in a checkpoint's inputs, the offsets of topic that
// writer w of the marked input tag reflects, as its last marker read
// said.
func markedName(tag string, w int32, topic string) string {
	return fmt.Sprintf("\x00marked:%s:%d:%s", tag, w, topic)
}

// noteMarked records in cp's inputs that writer w of the marked input
// tag reflects pos. Kept in the checkpoint, what the writers said
// survives a restart, which reads on after their markers.
func noteMarked(cp *materialize.Checkpoint, tag string, w int32, pos materialize.Position) {
	for topic, parts := range pos {
		name := markedName(tag, w, topic)
		for q, off := range parts {
			if old, ok := cp.Input[name][q]; !ok || off > old {
				setOffset(&cp.Input, name, q, off)
			}
		}
	}
}

// marked advances dst to what the input tag, whose markers compose as
// m says, reflects by what cp holds of its writers (noteMarked): per
// topic partition, the least of what the writers that said something
// of it reflect, and, of a topic each writer reads all of, only once
// every writer has.
func marked(dst materialize.Position, cp materialize.Checkpoint, tag string, m *planner.Marks) {
	for _, src := range m.Sources {
		least := map[int32]int64{}
		count := map[int32]int32{}
		for w := int32(0); w < m.Writers; w++ {
			for q, off := range cp.Input[markedName(tag, w, src.Topic)] {
				if c, ok := least[q]; !ok || off < c {
					least[q] = off
				}
				count[q]++
			}
		}
		for q, off := range least {
			if !src.All || count[q] == m.Writers {
				dst.Advance(src.Topic, q, off)
			}
		}
	}
}
