package kafka

// Partition returns the partition of a record with the given key among
// numPartitions partitions, exactly as Kafka's default partitioner places
// keyed records: toPositive(murmur2(key)) % numPartitions, where murmur2 is
// Kafka's Java implementation (seed 0x9747b28c) and toPositive masks off
// the sign bit. kgo's StickyKeyPartitioner(nil), librdkafka's
// "murmur2_random" and the Java client all agree with it, so a key written
// by any of them lands where basin looks for it.
//
// key is the serialized record key (see serde.EncodeKey). Kafka's
// partitioner places records with a nil key by stickiness, not by hash;
// Partition hashes a nil key like an empty one, so a caller producing
// keyless records decides their partition itself.
//
// Partition panics if numPartitions is not positive, like a division by
// zero: a topic always has at least one partition.
func Partition(key []byte, numPartitions int32) int32 {
	if numPartitions <= 0 {
		panic("kafka: Partition called with a non-positive partition count")
	}
	return int32((murmur2(key) & 0x7fffffff) % uint32(numPartitions))
}

// murmur2 is Kafka's org.apache.kafka.common.utils.Utils.murmur2, returned
// as the uint32 bit pattern of Java's int result.
func murmur2(b []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(b))
	for len(b) >= 4 {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		b = b[4:]
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
