package kafka

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// RecordPool recycles the memory franz-go decodes fetched records into
// (kgo.PoolRecords) and decompresses their batches into
// (kgo.PoolDecompressBytes). A consumer given it with kgo.WithPools must
// call Recycle on every record it polls once it is done with the
// record's key, value and headers: the memory is then decoded into
// again. A reader of a whole topic (a restore of a changelog) thus goes
// round the same few buffers, rather than allocating, zeroing and
// leaving to the collector a fresh slice of records for every batch.
// It is safe for concurrent use.
type RecordPool struct {
	// The pools hold pointers to slices of length 0: a slice put in an
	// interface would be boxed, which allocates at every Put.
	recs  sync.Pool // *[]kgo.Record
	bytes sync.Pool // *[]byte
}

// maxPooledBytes bounds a decompression buffer kept for reuse.
const maxPooledBytes = 16 << 20

// GetRecords implements kgo.PoolRecords.
func (p *RecordPool) GetRecords(n int) []kgo.Record {
	if rs, ok := p.recs.Get().(*[]kgo.Record); ok && cap(*rs) >= n {
		return *rs
	}
	return make([]kgo.Record, 0, n)
}

// PutRecords implements kgo.PoolRecords. The records come back zeroed
// (kgo.Record.Recycle clears each): none holds on to its batch's memory.
func (p *RecordPool) PutRecords(rs []kgo.Record) {
	rs = rs[:0]
	p.recs.Put(&rs)
}

// GetDecompressBytes implements kgo.PoolDecompressBytes: a buffer of
// any capacity (franz-go grows it as needed).
func (p *RecordPool) GetDecompressBytes([]byte, kgo.CompressionCodecType) []byte {
	if b, ok := p.bytes.Get().(*[]byte); ok {
		return *b
	}
	return nil
}

// PutDecompressBytes implements kgo.PoolDecompressBytes.
func (p *RecordPool) PutDecompressBytes(b []byte) {
	if cap(b) > 0 && cap(b) <= maxPooledBytes {
		b = b[:0]
		p.bytes.Put(&b)
	}
}

// Recycle recycles every record of fetches (see RecordPool).
func Recycle(fetches kgo.Fetches) {
	fetches.EachRecord(func(r *kgo.Record) { r.Recycle() })
}
