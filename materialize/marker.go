package materialize

// MarshalCheckpoint encodes cp for the changelog's position markers, with
// the same codec the store uses for its own checkpoint. ChangelogOffset
// is meaningless in a marker (a marker cannot know its own offset before
// it is written) and is ignored by the reader.
func MarshalCheckpoint(cp Checkpoint) []byte { return encodeCheckpoint(nil, cp) }

// UnmarshalCheckpoint decodes a checkpoint written by MarshalCheckpoint.
func UnmarshalCheckpoint(b []byte) (Checkpoint, error) { return decodeCheckpoint(b) }
