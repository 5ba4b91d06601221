package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group protocol data. basin's join metadata and assignment travel inside
// the standard consumer protocol envelopes, kmsg.ConsumerMemberMetadata
// and kmsg.ConsumerMemberAssignment, in their UserData, as Kafka Streams
// does: brokers (the new group coordinator parses "consumer" protocol
// metadata), kfake and admin tools (kadm, kafka-consumer-groups) see a
// well-formed consumer group subscribed to the membership topic with no
// partitions assigned.
//
// The payloads (protocol_join.go, protocol_assignment.go) are compact
// binary: a version byte, then varint-encoded fields. A decoder accepts
// any version ≥ 1 and reads the version-1 fields, ignoring trailing
// bytes, so a later version may only append fields; an incompatible
// change needs a new ProtocolName. Decoders never panic on garbage: every
// length and count is checked against the bytes left.

// protocolVersion is the version this code writes.
const protocolVersion = 1

var (
	// ErrMalformed is returned (wrapped) when group protocol data cannot
	// be decoded.
	ErrMalformed = errors.New("ha: malformed group protocol data")
	// ErrUnsupportedVersion is returned (wrapped) for a payload whose
	// version this code cannot read.
	ErrUnsupportedVersion = errors.New("ha: unsupported group protocol version")
)

// maxStringLen bounds strings in protocol data (node ids, addresses,
// view names).
const maxStringLen = 1 << 16

type encoder struct{ b []byte }

func (e *encoder) byte(v byte)      { e.b = append(e.b, v) }
func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) u64(v uint64)     { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) count(n int)      { e.uvarint(uint64(n)) }
func (e *encoder) bytes() []byte    { return e.b }

// decoder reads protocol data. After the first error every read returns
// a zero value, and err keeps that first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int32() int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("value %d out of int32 range", v)
		return 0
	}
	return int32(v)
}

func (d *decoder) u64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("truncated")
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > maxStringLen || n > uint64(len(d.b)) {
		d.fail("string of %d bytes with %d left", n, len(d.b))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// count reads an element count; each element takes at least minSize
// bytes, which bounds the count by the bytes left and so bounds any
// allocation a decoder makes from it.
func (d *decoder) count(minSize int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)/minSize) {
		d.fail("count %d exceeds the %d bytes left", n, len(d.b))
		return 0
	}
	return int(n)
}

// version reads and checks the version byte.
func (d *decoder) version(what string) byte {
	v := d.byte()
	if d.err == nil && v < 1 {
		d.err = fmt.Errorf("%w: %s version %d", ErrUnsupportedVersion, what, v)
	}
	return v
}

// digest is the digest of join metadata recorded in NodeTasks.JoinDigest:
// FNV-1a of the protocol metadata bytes, never zero.
func digest(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	if s := h.Sum64(); s != 0 {
		return s
	}
	return 1
}

// EncodeGroupMetadata wraps join metadata in the consumer protocol
// envelope subscribed to topic: the bytes JoinGroupMetadata returns.
func EncodeGroupMetadata(topic string, m JoinMetadata) []byte {
	meta := kmsg.ConsumerMemberMetadata{Version: 0, Topics: []string{topic}, UserData: m.AppendTo(nil)}
	return meta.AppendTo(nil)
}

// DecodeGroupMetadata unwraps and decodes a member's protocol metadata.
func DecodeGroupMetadata(b []byte) (JoinMetadata, error) {
	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(b); err != nil {
		return JoinMetadata{}, fmt.Errorf("%w: consumer member metadata: %v", ErrMalformed, err)
	}
	return DecodeJoinMetadata(meta.UserData)
}

// EncodeGroupAssignment wraps an assignment in the consumer protocol
// envelope, with no partitions: the bytes each member gets in SyncGroup.
func EncodeGroupAssignment(a *Assignment) []byte {
	asg := kmsg.ConsumerMemberAssignment{Version: 0, UserData: a.AppendTo(nil)}
	return asg.AppendTo(nil)
}

// DecodeGroupAssignment unwraps and decodes a SyncGroup assignment.
func DecodeGroupAssignment(b []byte) (Assignment, error) {
	var asg kmsg.ConsumerMemberAssignment
	if err := asg.ReadFrom(b); err != nil {
		return Assignment{}, fmt.Errorf("%w: consumer member assignment: %v", ErrMalformed, err)
	}
	return DecodeAssignment(asg.UserData)
}
