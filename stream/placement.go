package stream

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/planner"
	"github.com/basindb/basin/serde"
)

// Placement of keyed records.
//
// A table, and a view keyed and partitioned as its source, keeps each key
// in the partition its relation's partitioner gives it
// (catalog.Relation.Partitioner: murmur2 unless the source declares its
// producers' rule), so a key lookup reads one partition. A producer that
// follows another rule (librdkafka's CRC32, Sarama's FNV-1a, a custom
// one) puts some keys elsewhere. The task reading such a partition finds
// each misplaced record by hashing its key (placement.owner), counts it
// and forwards it, unchanged, to its key's partition of the relation's
// forwarding topic; the task of that partition reads its source
// partition and its forwarding partition both, so every record of a key
// is applied in one store, and a view's rows stay unique per key. A
// view forwards inside its transaction (exactly once); a table, which
// keeps no transactions, forwards before it checkpoints, and the owner
// drops a forwarded record its checkpoint has already passed
// (tableTask).
//
// Records of one key that land on different partitions are applied in
// the order the key's partition receives them: its own records at once,
// forwarded ones a round trip through Kafka later. Kafka orders records
// only within a partition; producers that spread one key over several
// partitions have no order between them to keep.

// placement checks where a task's input records belong.
type placement struct {
	part       kafka.Partitioner
	partitions int32
	p          int32 // the task's partition
	codec      *serde.Codec
	// canonical is whether key bytes must be encoded again before
	// hashing: a JSON key may be written with other spacing or field
	// order than basin's, and its partition is that of basin's bytes,
	// which lookups hash. Keys in Kafka's formats have one encoding.
	canonical bool
	keyVals   []any
}

func newPlacement(rel *catalog.Relation, codec *serde.Codec, p int32) *placement {
	return &placement{part: rel.PartitionerOf(), partitions: rel.Partitions, p: p, codec: codec,
		canonical: rel.KeyFormat != planner.FormatKafka, keyVals: make([]any, len(codec.KeyIndex()))}
}

// owner returns the partition a record whose decoded row is row (key
// columns set) and whose record key is key belongs to, and whether it is
// another than the task's. A record without a whole key belongs where
// it is: it has no key to be found by.
func (pl *placement) owner(key []byte, row catalog.Row) (int32, bool) {
	if len(pl.codec.KeyIndex()) == 0 || key == nil {
		return pl.p, false
	}
	for i, k := range pl.codec.KeyIndex() {
		pl.keyVals[i] = row[k]
	}
	if slices.Contains(pl.keyVals, nil) {
		return pl.p, false
	}
	if pl.canonical {
		kb, err := pl.codec.EncodeKey(pl.keyVals)
		if err != nil {
			return pl.p, false
		}
		key = kb
	}
	q := pl.part.Partition(key, pl.partitions)
	return q, q != pl.p
}

// forwardRecord returns the record that forwards r, read from partition
// sp, to partition q of topic, made in a: r's key, value and timestamp,
// with the source partition and offset in a header.
func forwardRecord(a *recordArena, topic string, q int32, r *kgo.Record) *kgo.Record {
	buf := a.bytes.begin()
	start := len(buf)
	src := a.bytes.end(appendSrc(buf, r.Partition, r.Offset), start)
	rec := a.record()
	rec.Topic, rec.Partition = topic, q
	rec.Key, rec.Value = r.Key, r.Value
	rec.Timestamp = r.Timestamp
	rec.Headers = a.header(headerSource, src)
	if len(r.Headers) > 0 {
		// The producer's headers go along, for the header columns
		// (serde/headers.go), before basin's; any of the producer's
		// named as basin's own do not, so that they cannot pass for
		// them.
		hs := make([]kgo.RecordHeader, 0, len(r.Headers)+1)
		for _, h := range r.Headers {
			if !strings.HasPrefix(h.Key, "basin.") {
				hs = append(hs, h)
			}
		}
		rec.Headers = append(hs, rec.Headers[0])
	}
	return rec
}
