package stream

// Arenas: the records and bytes one batch of a task produces, allocated
// in blocks and dropped together (see recordArena).

import "github.com/twmb/franz-go/pkg/kgo"

// arenaRecords and arenaBytes size the blocks of a recordArena.
const (
	arenaRecords = 256
	arenaBytes   = 32 << 10
)

// recordArena hands out the records of a batch, and the bytes and headers
// they hold, from blocks each shared by many of them: an allocation per
// block rather than several per record. A block lives as long as
// anything refers to any of it, so what an arena holds should die
// together, as a batch's records do once produced.
type recordArena struct {
	recs  []kgo.Record
	hdrs  []kgo.RecordHeader
	bytes byteArena
}

func (a *recordArena) record() *kgo.Record {
	if len(a.recs) == cap(a.recs) {
		a.recs = make([]kgo.Record, 0, arenaRecords)
	}
	a.recs = a.recs[:len(a.recs)+1]
	return &a.recs[len(a.recs)-1]
}

// header returns a header list of one header.
func (a *recordArena) header(key string, value []byte) []kgo.RecordHeader {
	if len(a.hdrs) == cap(a.hdrs) {
		a.hdrs = make([]kgo.RecordHeader, 0, arenaRecords)
	}
	a.hdrs = append(a.hdrs, kgo.RecordHeader{Key: key, Value: value})
	n := len(a.hdrs)
	return a.hdrs[n-1 : n : n]
}

func (a *recordArena) copy(b []byte) []byte {
	buf := a.bytes.begin()
	start := len(buf)
	return a.bytes.end(append(buf, b...), start)
}

// byteArena hands out byte slices from shared blocks. A slice is made by
// appending to what begin returns and handing the result to end with
// the length begin's had.
type byteArena struct {
	buf []byte
}

// begin returns the block to append to.
func (a *byteArena) begin() []byte {
	if cap(a.buf)-len(a.buf) < arenaBytes/64 {
		a.buf = make([]byte, 0, arenaBytes)
	}
	return a.buf
}

// end returns what was appended to buf after start, and keeps buf (which
// the appending may have grown into a new block) for the next slice.
func (a *byteArena) end(buf []byte, start int) []byte {
	a.buf = buf
	return buf[start:len(buf):len(buf)]
}
