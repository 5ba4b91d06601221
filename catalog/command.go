package catalog

import (
	"encoding/json"
	"fmt"
)

// Op is a catalog command kind.
type Op string

const (
	OpCreate Op = "create"
	OpDrop   Op = "drop"
	// OpHalt records that a task of relation Name found its input
	// partition Halt.Topic/Halt.Partition ending below the offset it had
	// applied: every task of that partition stays stopped until the
	// operator resumes it (OpResume) or drops the relation.
	OpHalt Op = "halt"
	// OpResume is the operator's RESUME of relation Name's query: each of
	// its halts is accepted, and its tasks continue where the topic
	// ended when the loss was found.
	OpResume Op = "resume"
)

// Command is one record of the command topic. It carries the validated,
// resolved definition rather than only the SQL text, so replay does not
// depend on the parser of the node that replays it.
type Command struct {
	Op       Op        `json:"op"`
	Relation *Relation `json:"relation,omitempty"`
	Name     string    `json:"name,omitempty"`
	// Halt is the loss an OpHalt records.
	Halt *Halt `json:"halt,omitempty"`
	// Node is the node that submitted the command, for debugging.
	Node string `json:"node,omitempty"`
}

// commandVersion is written in each record's header; a node refuses to
// replay a log written by a newer format rather than misreading it.
const commandVersion = "1"

// EncodeCommand returns the record value for cmd.
func EncodeCommand(cmd *Command) ([]byte, error) { return json.Marshal(cmd) }

// DecodeCommand parses a record value.
func DecodeCommand(b []byte) (*Command, error) {
	var cmd Command
	if err := json.Unmarshal(b, &cmd); err != nil {
		return nil, fmt.Errorf("catalog: undecodable command: %w", err)
	}
	if cmd.Op == OpCreate && cmd.Relation == nil {
		return nil, fmt.Errorf("catalog: create command without a relation")
	}
	if cmd.Op == OpHalt && cmd.Halt == nil {
		return nil, fmt.Errorf("catalog: halt command without a halt")
	}
	return &cmd, nil
}
