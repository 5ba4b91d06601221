package kafka

import (
	"fmt"
	"hash/crc32"
	"strings"
)

// A Partitioner is a producer's rule for the partition of a keyed record:
// the partition, among numPartitions, of a record whose serialized key is
// key. Records written by producers that follow one rule put each key in
// one partition; basin reads a key from the partition its relation's
// rule gives (catalog.Relation.Partitioner), and a record found on
// another partition is misplaced (exec forwards it to its own).
type Partitioner struct {
	// Name is the canonical name (Murmur2, CRC32 or FNV1a).
	Name      string
	partition func(key []byte, numPartitions int32) int32
}

// Partition returns the partition of key among numPartitions. It panics
// if numPartitions is not positive, like Partition.
func (p Partitioner) Partition(key []byte, numPartitions int32) int32 {
	if numPartitions <= 0 {
		panic("kafka: Partition called with a non-positive partition count")
	}
	if p.partition == nil {
		return Partition(key, numPartitions)
	}
	return p.partition(key, numPartitions)
}

// Canonical partitioner names.
const (
	Murmur2 = "murmur2"
	CRC32   = "crc32"
	FNV1a   = "fnv1a"
)

// The partitioners basin knows, by canonical name.
var (
	// PartitionerMurmur2 is Kafka's default (the Java client, kgo's
	// StickyKeyPartitioner, librdkafka's murmur2 and murmur2_random):
	// Partition.
	PartitionerMurmur2 = Partitioner{Name: Murmur2, partition: Partition}
	// PartitionerCRC32 is librdkafka's consistent and consistent_random,
	// the default of kcat and of every librdkafka client
	// (confluent-kafka-python, -go, -dotnet, node-rdkafka): the IEEE
	// CRC-32 of the key (as zlib computes it), as an unsigned number,
	// modulo the partition count.
	PartitionerCRC32 = Partitioner{Name: CRC32, partition: func(key []byte, n int32) int32 {
		return int32(crc32.ChecksumIEEE(key) % uint32(n))
	}}
	// PartitionerFNV1a is Sarama's default (NewHashPartitioner) and
	// librdkafka's fnv1a and fnv1a_random, which match it: the 32-bit
	// FNV-1a hash of the key read as a signed number, modulo the
	// partition count, negated when negative.
	PartitionerFNV1a = Partitioner{Name: FNV1a, partition: func(key []byte, n int32) int32 {
		p := int32(fnv1a(key)) % n
		if p < 0 {
			p = -p
		}
		return p
	}}
)

// partitionerNames maps every accepted spelling, lower case, to its
// partitioner: the canonical names and the librdkafka names of the same
// rules for keyed records (the _random variants differ only in where
// they put records without a key, which have no partition to be
// misplaced from).
var partitionerNames = map[string]Partitioner{
	Murmur2:             PartitionerMurmur2,
	"murmur2_random":    PartitionerMurmur2,
	"default":           PartitionerMurmur2,
	CRC32:               PartitionerCRC32,
	"consistent":        PartitionerCRC32,
	"consistent_random": PartitionerCRC32,
	FNV1a:               PartitionerFNV1a,
	"fnv1a_random":      PartitionerFNV1a,
}

// PartitionerNames lists the accepted names, canonical ones first, for
// error messages.
const PartitionerNames = "murmur2 (the default; also murmur2_random), crc32 (also consistent, consistent_random), fnv1a (also fnv1a_random)"

// ParsePartitioner returns the partitioner named name (any accepted
// spelling, case-insensitive); "" is Murmur2.
func ParsePartitioner(name string) (Partitioner, error) {
	if name == "" {
		return PartitionerMurmur2, nil
	}
	if p, ok := partitionerNames[strings.ToLower(name)]; ok {
		return p, nil
	}
	return Partitioner{}, fmt.Errorf("unknown partitioner %q: use %s", name, PartitionerNames)
}

// PartitionerOf returns the partitioner named name, Murmur2 for "" or a
// name it does not know (names are checked where they are accepted).
func PartitionerOf(name string) Partitioner {
	// The catalog keeps canonical names: those need no folding, and this
	// runs for every key a read or an INSERT places.
	switch name {
	case "", Murmur2:
		return PartitionerMurmur2
	case CRC32:
		return PartitionerCRC32
	case FNV1a:
		return PartitionerFNV1a
	}
	p, err := ParsePartitioner(name)
	if err != nil {
		return PartitionerMurmur2
	}
	return p
}

// fnv1a is the 32-bit FNV-1a hash.
func fnv1a(b []byte) uint32 {
	const (
		offset uint32 = 2166136261
		prime  uint32 = 16777619
	)
	h := offset
	for _, c := range b {
		h ^= uint32(c)
		h *= prime
	}
	return h
}
