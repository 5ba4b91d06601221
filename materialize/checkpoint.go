package materialize

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Checkpoint is what a store reflects, written in the same Pebble batch as
// the data it describes (see Batch.Commit). Every offset in it is the
// next offset to read, never the last one applied: a store that has
// applied changelog records 0..41 has ChangelogOffset 42, and a fresh
// store has the zero Checkpoint and starts reading at 0.
type Checkpoint struct {
	// ChangelogOffset is the next offset of the view partition's changelog
	// to read: the store holds exactly the changelog prefix [0,
	// ChangelogOffset). 0 when nothing was applied.
	ChangelogOffset int64
	// Input is the next offset to read of each direct input of the task
	// (source topics or a repartition topic): topic -> partition -> offset.
	// An active task resumes consuming its inputs from here.
	Input map[string]map[int32]int64
	// Position is the source offsets the data reflects (see Position). It
	// equals Input when the task reads its sources directly; through a
	// repartition topic it is assembled from the source offsets that
	// records and position markers carry.
	Position Position
	// UpdatedAt is the timestamp of the last record applied (the record's
	// own time, not the time of the commit), for time lag; zero when
	// unknown.
	UpdatedAt time.Time
}

// Clone returns a deep copy of cp.
func (cp Checkpoint) Clone() Checkpoint {
	c := cp
	if cp.Input != nil {
		c.Input = Position(cp.Input).Clone()
	}
	if cp.Position != nil {
		c.Position = cp.Position.Clone()
	}
	return c
}

// String renders cp for logs and debugging, e.g.
// "changelog=42 input=[orders/0:17] position=[orders/0:17] updated=2024-05-06T07:08:09Z".
func (cp Checkpoint) String() string {
	s := fmt.Sprintf("changelog=%d input=[%s] position=[%s]", cp.ChangelogOffset, Position(cp.Input).Describe(), cp.Position.Describe())
	if !cp.UpdatedAt.IsZero() {
		s += " updated=" + cp.UpdatedAt.UTC().Format(time.RFC3339Nano)
	}
	return s
}

// checkpointVersion is the first byte of an encoded checkpoint.
const checkpointVersion = 1

// encodeCheckpoint is the one place checkpoints are encoded:
//
//	version byte (1)
//	varint  ChangelogOffset
//	offsets Input     (see appendOffsets)
//	offsets Position
//	byte 0, or byte 1 varint seconds uvarint nanoseconds: UpdatedAt
func encodeCheckpoint(dst []byte, cp Checkpoint) []byte {
	dst = append(dst, checkpointVersion)
	dst = binary.AppendVarint(dst, cp.ChangelogOffset)
	dst = appendOffsets(dst, cp.Input)
	dst = appendOffsets(dst, cp.Position)
	if cp.UpdatedAt.IsZero() {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	dst = binary.AppendVarint(dst, cp.UpdatedAt.Unix())
	return binary.AppendUvarint(dst, uint64(cp.UpdatedAt.Nanosecond()))
}

func decodeCheckpoint(b []byte) (Checkpoint, error) {
	var cp Checkpoint
	if len(b) == 0 || b[0] != checkpointVersion {
		return cp, fmt.Errorf("%w: unknown checkpoint version", ErrBadEncoding)
	}
	b = b[1:]
	off, k := binary.Varint(b)
	if k <= 0 {
		return cp, fmt.Errorf("%w: bad checkpoint changelog offset", ErrBadEncoding)
	}
	cp.ChangelogOffset = off
	b = b[k:]
	var err error
	if cp.Input, b, err = decodeOffsets(b); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint input: %w", err)
	}
	var pos map[string]map[int32]int64
	if pos, b, err = decodeOffsets(b); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint position: %w", err)
	}
	cp.Position = pos
	if len(b) == 0 {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint truncated", ErrBadEncoding)
	}
	switch b[0] {
	case 0:
		b = b[1:]
	case 1:
		sec, k := binary.Varint(b[1:])
		if k <= 0 {
			return Checkpoint{}, fmt.Errorf("%w: bad checkpoint time", ErrBadEncoding)
		}
		nsec, k2 := binary.Uvarint(b[1+k:])
		if k2 <= 0 || nsec >= 1e9 {
			return Checkpoint{}, fmt.Errorf("%w: bad checkpoint time", ErrBadEncoding)
		}
		cp.UpdatedAt = time.Unix(sec, int64(nsec)).UTC()
		b = b[1+k+k2:]
	default:
		return Checkpoint{}, fmt.Errorf("%w: bad checkpoint time flag", ErrBadEncoding)
	}
	if len(b) != 0 {
		return Checkpoint{}, fmt.Errorf("%w: %d trailing bytes after checkpoint", ErrBadEncoding, len(b))
	}
	return cp, nil
}
