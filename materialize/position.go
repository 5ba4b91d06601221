package materialize

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Position is the set of source offsets a store reflects, as in Kafka
// Streams' IQv2: topic -> partition -> the next offset not yet reflected
// (Kafka's committed-offset convention, so 0 means nothing of that
// partition has been seen and a partition missing from the map is the same
// as 0). Positions only move forward; comparing them is how read-your-writes
// and monotonic reads are decided (see Covers).
//
// A nil Position is a valid empty position for reading; Advance and Merge
// need a non-nil one (use make(Position) or Clone).
type Position map[string]map[int32]int64

// Clone returns a deep copy of p (never nil).
func (p Position) Clone() Position {
	c := make(Position, len(p))
	for topic, parts := range p {
		cp := make(map[int32]int64, len(parts))
		for part, off := range parts {
			cp[part] = off
		}
		c[topic] = cp
	}
	return c
}

// Get returns the next offset of topic/partition not yet reflected, and
// whether p has an entry for it.
func (p Position) Get(topic string, partition int32) (int64, bool) {
	off, ok := p[topic][partition]
	return off, ok
}

// Advance records that every offset of topic/partition before next is
// reflected. It keeps the maximum, so replaying an older marker is
// harmless.
func (p Position) Advance(topic string, partition int32, next int64) {
	parts := p[topic]
	if parts == nil {
		parts = make(map[int32]int64)
		p[topic] = parts
	}
	if cur, ok := parts[partition]; !ok || next > cur {
		parts[partition] = next
	}
}

// Merge advances p by every entry of other.
func (p Position) Merge(other Position) {
	for topic, parts := range other {
		for part, off := range parts {
			p.Advance(topic, part, off)
		}
	}
}

// Covers reports whether p has reflected everything other has: every
// entry of other is <= the corresponding entry of p (missing entries of p
// count as 0). An empty other is covered by every position.
func (p Position) Covers(other Position) bool {
	for topic, parts := range other {
		mine := p[topic]
		for part, off := range parts {
			if off > mine[part] {
				return false
			}
		}
	}
	return true
}

// Behind returns how many offsets p is behind target: the sum over
// target's entries of how far p's entry falls short (0 when p covers
// target). With target the end offsets of the sources, it is the offset
// lag a store reports.
func (p Position) Behind(target Position) int64 {
	var lag int64
	for topic, parts := range target {
		mine := p[topic]
		for part, off := range parts {
			if d := off - mine[part]; d > 0 {
				lag += d
			}
		}
	}
	return lag
}

// Equal reports whether p and other have the same entries.
func (p Position) Equal(other Position) bool {
	if p.entries() != other.entries() {
		return false
	}
	for topic, parts := range p {
		for part, off := range parts {
			if o, ok := other[topic][part]; !ok || o != off {
				return false
			}
		}
	}
	return true
}

func (p Position) entries() int {
	n := 0
	for _, parts := range p {
		n += len(parts)
	}
	return n
}

// positionTokenVersion is the first byte of every encoded token.
const positionTokenVersion = 1

// String returns p as a compact, URL-safe token (base64url of a binary
// form, topics and partitions sorted so equal positions give equal
// tokens). ParsePosition reverses it. This is the token users pass to
// SET basin.min_position and that _position shows.
func (p Position) String() string {
	b := appendOffsets([]byte{positionTokenVersion}, p)
	return base64.RawURLEncoding.EncodeToString(b)
}

// TopicTokens makes the tokens (Position.String) of positions in one
// topic with a fixed set of partitions, for a reader that makes one per
// record: the same tokens, without sorting or a map per call.
type TopicTokens struct {
	parts []int32 // sorted
	// buf holds the encoding of a token; its first whole bytes are the
	// same in every token, and are encoded once in enc: base64 encodes
	// three bytes at a time, so the token's encoding starts with that of
	// its first 3k bytes.
	buf    []byte
	prefix int // the bytes before the offsets
	whole  int // 3k, prefix rounded down
	enc    []byte
}

// NewTopicTokens returns the TopicTokens of topic's partitions parts.
func NewTopicTokens(topic string, parts []int32) *TopicTokens {
	t := &TopicTokens{parts: slices.Sorted(slices.Values(parts))}
	t.buf = append(t.buf, positionTokenVersion)
	t.buf = binary.AppendUvarint(t.buf, 1)
	t.buf = binary.AppendUvarint(t.buf, uint64(len(topic)))
	t.buf = append(t.buf, topic...)
	t.buf = binary.AppendUvarint(t.buf, uint64(len(parts)))
	t.prefix, t.whole = len(t.buf), len(t.buf)/3*3
	t.enc = base64.RawURLEncoding.AppendEncode(nil, t.buf[:t.whole])
	return t
}

// Token returns the token of the position whose offsets in the topic are
// offs, which has each of the partitions.
func (t *TopicTokens) Token(offs map[int32]int64) string {
	t.buf = t.buf[:t.prefix]
	for _, p := range t.parts {
		t.buf = binary.AppendVarint(t.buf, int64(p))
		t.buf = binary.AppendVarint(t.buf, offs[p])
	}
	n := base64.RawURLEncoding.EncodedLen(t.whole)
	t.enc = base64.RawURLEncoding.AppendEncode(t.enc[:n], t.buf[t.whole:])
	return string(t.enc)
}

// Describe returns p in a human-readable form for logs and EXPLAIN,
// e.g. "orders/0:12 orders/1:7".
func (p Position) Describe() string {
	var sb strings.Builder
	for _, topic := range sortedKeys(p) {
		parts := p[topic]
		for _, part := range sortedKeys(parts) {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(topic)
			sb.WriteByte('/')
			sb.WriteString(strconv.FormatInt(int64(part), 10))
			sb.WriteByte(':')
			sb.WriteString(strconv.FormatInt(parts[part], 10))
		}
	}
	return sb.String()
}

// ParsePosition parses a token made by Position.String. The empty token is
// the empty position.
func ParsePosition(token string) (Position, error) {
	if token == "" {
		return Position{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, fmt.Errorf("%w: position token %q is not base64url: %v", ErrBadEncoding, token, err)
	}
	if len(b) == 0 || b[0] != positionTokenVersion {
		return nil, fmt.Errorf("%w: position token %q has an unknown version", ErrBadEncoding, token)
	}
	offs, rest, err := decodeOffsets(b[1:])
	if err != nil {
		return nil, fmt.Errorf("position token %q: %w", token, err)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: position token %q has trailing bytes", ErrBadEncoding, token)
	}
	return Position(offs), nil
}

// appendOffsets appends the binary form of a topic -> partition -> offset
// map, shared by position tokens and checkpoints: uvarint topic count, then
// per topic in order a uvarint-length-prefixed name, a uvarint partition
// count and per partition in order a varint partition and a varint offset.
func appendOffsets(dst []byte, m map[string]map[int32]int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(m)))
	for _, topic := range sortedKeys(m) {
		parts := m[topic]
		dst = binary.AppendUvarint(dst, uint64(len(topic)))
		dst = append(dst, topic...)
		dst = binary.AppendUvarint(dst, uint64(len(parts)))
		for _, part := range sortedKeys(parts) {
			dst = binary.AppendVarint(dst, int64(part))
			dst = binary.AppendVarint(dst, parts[part])
		}
	}
	return dst
}

func decodeOffsets(b []byte) (map[string]map[int32]int64, []byte, error) {
	bad := func(what string) error { return fmt.Errorf("%w: offsets: %s", ErrBadEncoding, what) }
	nt, k := binary.Uvarint(b)
	// Each topic takes at least two bytes; bound allocations for garbage.
	if k <= 0 || nt > uint64(len(b)) {
		return nil, nil, bad("bad topic count")
	}
	b = b[k:]
	m := make(map[string]map[int32]int64, nt)
	for range nt {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, nil, bad("bad topic name")
		}
		topic := string(b[k : k+int(l)])
		b = b[k+int(l):]
		if _, dup := m[topic]; dup {
			return nil, nil, bad("duplicate topic")
		}
		np, k := binary.Uvarint(b)
		if k <= 0 || np > uint64(len(b)) {
			return nil, nil, bad("bad partition count")
		}
		b = b[k:]
		parts := make(map[int32]int64, np)
		for range np {
			part, k := binary.Varint(b)
			if k <= 0 || part != int64(int32(part)) {
				return nil, nil, bad("bad partition")
			}
			b = b[k:]
			off, k := binary.Varint(b)
			if k <= 0 {
				return nil, nil, bad("bad offset")
			}
			b = b[k:]
			parts[int32(part)] = off
		}
		m[topic] = parts
	}
	return m, b, nil
}

func sortedKeys[K string | int32, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
