package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
)

// Kind says what a relation is.
type Kind string

const (
	// KindStream is an append-only relation over a topic.
	KindStream Kind = "STREAM"
	// KindTable is an upsert-by-key relation over a topic; basin
	// materializes it so that it can be read with SELECT.
	KindTable Kind = "TABLE"
	// KindView is a table defined by CREATE TABLE ... AS SELECT, kept up
	// to date by a persistent query.
	KindView Kind = "VIEW"
	// KindInsert is not a relation but a persistent query of INSERT INTO
	// stream SELECT ...: it writes into a stream another query (or
	// producers) writes too. It is in the catalog to be started, assigned
	// and dropped (TERMINATE) like the queries of relations, under its
	// query id (lower case, "insertquery_<n>"), and Lookup never returns
	// it.
	KindInsert Kind = "INSERT"
)

// Relation is a stream, table or view as the catalog records it. A
// Relation is immutable once in the catalog; replacing it means a new
// command.
type Relation struct {
	Name   string `json:"name"`
	Kind   Kind   `json:"kind"`
	Schema Schema `json:"schema"`
	// Topic is the Kafka topic of a stream or table; for a view it is the
	// view's changelog topic.
	Topic       string `json:"topic"`
	Partitions  int32  `json:"partitions"`
	KeyFormat   string `json:"key_format"`
	ValueFormat string `json:"value_format"`
	// Partitioner names the rule that puts each key in one partition
	// (kafka.ParsePartitioner's canonical names): for a stream or table
	// the rule of its producers (WITH (partitioner = ...)), for a view the
	// rule its rows are placed by. "" is murmur2, Kafka's default. A
	// record found on another partition than its key's is misplaced and
	// forwarded to its key's (docs/sql.md, "Partitioning").
	Partitioner string `json:"partitioner,omitempty"`
	// Options are the WITH options as given, keys lower case.
	Options map[string]string `json:"options,omitempty"`
	// SQL is the statement that created the relation.
	SQL string `json:"sql"`
	// Sources are the relations a view or a derived stream reads (lower
	// case names). A stream with sources is derived: CREATE STREAM ...
	// AS SELECT writes its records.
	Sources []string `json:"sources,omitempty"`
	// Tasks is the number of tasks of a derived stream's or an INSERT
	// query's query, one per partition of the stream it reads (its own
	// Partitions are its topic's); 0 for other relations, whose tasks are
	// their partitions.
	Tasks int32 `json:"tasks,omitempty"`
	// Into is the stream an INSERT query (KindInsert) writes into (lower
	// case); its Topic, Schema, formats and partitioning are that
	// stream's.
	Into string `json:"into,omitempty"`
	// Version is the command-topic offset of the command that created the
	// relation. It tells apart a relation from an older one of the same
	// name, so state on disk is never confused between them.
	Version int64 `json:"version"`
	// Window is set for a windowed view (window.go).
	Window *Window `json:"window,omitempty"`
	// Halts are the losses of input the relation's tasks found (OpHalt),
	// in the order found, with whether the operator accepted each.
	Halts []Halt `json:"halts,omitempty"`
}

// Halt is a loss of input a task found: partition Partition of Topic
// ended at End, below Offset, the offset the task had applied it up to.
// The records the task had applied at offsets End to Offset-1 are gone
// from the topic (truncated, or the topic deleted and created again);
// reading the partition from its start would apply again what the task
// has applied, reading on at Offset would skip unseen what producers
// write at End and after. So the partition's tasks stop, on every node,
// until the operator chooses: RESUME continues each at End (Resumed is
// then the command-topic offset of the RESUME), or DROP rebuilds.
type Halt struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// End is the partition's end when the loss was found; -1 when it
	// could not be read (RESUME then continues at Offset).
	End int64 `json:"end"`
	// Error is the task's error, as SHOW QUERIES and SHOW TASKS show it.
	Error string `json:"error"`
	// Resumed is the offset of the RESUME command that accepted the
	// loss, 0 while the tasks wait for the operator.
	Resumed int64 `json:"resumed,omitempty"`
}

// Halted returns the halt of topic/p the operator has not resumed, if
// any.
func (r *Relation) Halted(topic string, p int32) (Halt, bool) {
	for _, h := range r.Halts {
		if h.Topic == topic && h.Partition == p && h.Resumed == 0 {
			return h, true
		}
	}
	return Halt{}, false
}

// Materialized reports whether basin keeps the relation in Pebble (tables
// and views can be read with SELECT by key).
func (r *Relation) Materialized() bool { return r.Kind == KindTable || r.Kind == KindView }

// Derived reports whether the relation is a derived stream, one that a
// persistent query writes (CREATE STREAM ... AS SELECT).
func (r *Relation) Derived() bool { return r.Kind == KindStream && len(r.Sources) > 0 }

// HasQuery reports whether a persistent query keeps the relation: a
// table (materialized from its topic), a view, a derived stream, or an
// INSERT query.
func (r *Relation) HasQuery() bool { return r.Materialized() || r.Derived() || r.Kind == KindInsert }

// TaskPartitions is the number of tasks of the relation's persistent
// query, each with a store of its own: its partitions for a table or a
// view, its source's for a derived stream, 0 without a query.
func (r *Relation) TaskPartitions() int32 {
	switch {
	case r.Materialized():
		return r.Partitions
	case r.Derived() || r.Kind == KindInsert:
		return r.Tasks
	}
	return 0
}

// StoreName is the name of the relation's state in materialize: unique
// across drops and re-creates of the same name.
func (r *Relation) StoreName() string { return r.Name + "@" + strconv.FormatInt(int64(r.Version), 10) }

// Option returns the WITH option key, or def when absent.
func (r *Relation) Option(key, def string) string {
	if v, ok := r.Options[key]; ok {
		return v
	}
	return def
}

// Catalog is the set of relations, built by applying the command log in
// order. It is safe for concurrent use.
type Catalog struct {
	mu struct {
		sync.RWMutex
		rels map[string]*Relation // by lower-case name
		// applied is the offset of the last command applied, -1 before
		// any.
		applied int64
	}
}

// New returns an empty catalog.
func New() *Catalog {
	c := &Catalog{}
	c.mu.rels = make(map[string]*Relation)
	c.mu.applied = -1
	return c
}

// Lookup returns the relation named name (case-insensitive).
func (c *Catalog) Lookup(name string) (*Relation, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.mu.rels[strings.ToLower(name)]
	if ok && r.Kind == KindInsert {
		return nil, false
	}
	return r, ok
}

// LookupQuery returns the relation whose persistent query has id
// (Relation.QueryName, any case): a table, view, derived stream or
// INSERT query.
func (c *Catalog) LookupQuery(id string) (*Relation, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, r := range c.mu.rels {
		if r.HasQuery() && strings.EqualFold(r.QueryName(), id) {
			return r, true
		}
	}
	return nil, false
}

// Taken reports whether name is a relation's or an INSERT query's.
func (c *Catalog) Taken(name string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.mu.rels[strings.ToLower(name)]
	return ok
}

// Reaches reports whether the records of relation from flow, through
// the views, derived streams and INSERT queries that read it, into
// relation to (or from is to).
func (c *Catalog) Reaches(from, to string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	from, to = strings.ToLower(from), strings.ToLower(to)
	seen := map[string]bool{}
	next := []string{from}
	for len(next) > 0 {
		n := next[len(next)-1]
		next = next[:len(next)-1]
		if n == to {
			return true
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		for _, r := range c.mu.rels {
			if !slices.Contains(r.Sources, n) {
				continue
			}
			if r.Kind == KindInsert {
				next = append(next, r.Into)
			} else {
				next = append(next, strings.ToLower(r.Name))
			}
		}
	}
	return false
}

// Resolve is Lookup that returns a 42P01 error naming the relation.
func (c *Catalog) Resolve(name string) (*Relation, error) {
	if r, ok := c.Lookup(name); ok {
		return r, nil
	}
	return nil, pgerr.New(pgerr.UndefinedTable, "relation %q does not exist", name).
		WithHint("SHOW STREAMS and SHOW TABLES list what exists.")
}

// List returns the relations of the given kinds, sorted by name.
func (c *Catalog) List(kinds ...Kind) []*Relation {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*Relation
	for _, r := range c.mu.rels {
		for _, k := range kinds {
			if r.Kind == k {
				out = append(out, r)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Queries returns the relations a persistent query keeps (tables, views
// and derived streams: Relation.HasQuery) and the INSERT queries, sorted
// by name.
func (c *Catalog) Queries() []*Relation {
	out := c.List(KindTable, KindView, KindStream, KindInsert)
	return slices.DeleteFunc(out, func(r *Relation) bool { return !r.HasQuery() })
}

// Dependents returns the views, derived streams and INSERT queries that
// read name, and the INSERT queries that write into it, sorted by name.
func (c *Catalog) Dependents(name string) []*Relation {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.dependentsLocked(strings.ToLower(name))
}

func (c *Catalog) dependentsLocked(name string) []*Relation {
	var out []*Relation
	for _, r := range c.mu.rels {
		if slices.Contains(r.Sources, name) || r.Into == name {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Applied returns the offset of the last command applied, -1 before any.
func (c *Catalog) Applied() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.mu.applied
}

// Change is what applying one command did, for the node to act on.
type Change struct {
	Offset  int64
	Created *Relation // set when a relation was created
	Dropped *Relation // set when a relation was dropped
	// Altered is set when a halt or a resume replaced a relation's
	// entry with this one (same Version: its tasks and state stay).
	Altered *Relation
	// Err is why the command was rejected at apply time (a race between
	// two nodes' DDL); the catalog is unchanged then.
	Err error
}

// Apply applies the command at offset to the catalog. Apply is
// deterministic: every node that applies the same log in the same order
// ends with the same catalog, and a command that is invalid against the
// catalog at its position (two nodes raced) is rejected the same way
// everywhere.
func (c *Catalog) Apply(offset int64, cmd *Command) Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := Change{Offset: offset}
	if offset > c.mu.applied {
		c.mu.applied = offset
	}
	switch cmd.Op {
	case OpCreate:
		r := *cmd.Relation
		r.Version = offset
		name := strings.ToLower(r.Name)
		if _, ok := c.mu.rels[name]; ok {
			ch.Err = pgerr.New(pgerr.DuplicateTable, "relation %q already exists", r.Name)
			return ch
		}
		for _, s := range r.Sources {
			if _, ok := c.mu.rels[s]; !ok {
				ch.Err = pgerr.New(pgerr.UndefinedTable, "relation %q does not exist", s)
				return ch
			}
		}
		c.mu.rels[name] = &r
		ch.Created = &r
	case OpDrop:
		name := strings.ToLower(cmd.Name)
		r, ok := c.mu.rels[name]
		if !ok {
			ch.Err = pgerr.New(pgerr.UndefinedTable, "relation %q does not exist", cmd.Name)
			return ch
		}
		if deps := c.dependentsLocked(name); len(deps) > 0 {
			ch.Err = DependentsError(r, deps)
			return ch
		}
		delete(c.mu.rels, name)
		ch.Dropped = r
	case OpHalt, OpResume:
		name := strings.ToLower(cmd.Name)
		r, ok := c.mu.rels[name]
		if !ok {
			ch.Err = pgerr.New(pgerr.UndefinedTable, "relation %q does not exist", cmd.Name)
			return ch
		}
		var halts []Halt
		if cmd.Op == OpHalt {
			if halts = addHalt(r.Halts, *cmd.Halt); halts == nil {
				return ch // found already: nothing changes
			}
		} else {
			if halts = resumeHalts(r.Halts, offset); halts == nil {
				ch.Err = pgerr.New(pgerr.ObjectNotInPrerequisiteState, "query %s of %q is not stopped by lost input; nothing to resume", r.QueryName(), r.Name)
				return ch
			}
		}
		alt := *r
		alt.Halts = halts
		c.mu.rels[name] = &alt
		ch.Altered = &alt
	default:
		ch.Err = pgerr.New(pgerr.InternalError, "unknown catalog command %q at offset %d", cmd.Op, offset)
	}
	return ch
}

// addHalt returns halts with h added, or nil if halts has it already:
// a halt of the same partition waiting for the operator, or one of the
// same loss (offset and end) the operator resumed, which a replica
// that had not heard of the RESUME yet found again.
func addHalt(halts []Halt, h Halt) []Halt {
	for _, o := range halts {
		if o.Topic == h.Topic && o.Partition == h.Partition &&
			(o.Resumed == 0 || o.Offset == h.Offset && o.End == h.End) {
			return nil
		}
	}
	h.Resumed = 0
	return append(slices.Clip(halts), h)
}

// resumeHalts returns halts with each one waiting marked resumed by the
// command at offset, or nil if none waits.
func resumeHalts(halts []Halt, offset int64) []Halt {
	out := slices.Clone(halts)
	n := 0
	for i := range out {
		if out[i].Resumed == 0 {
			out[i].Resumed = offset
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return out
}

// DependentsError is the error for dropping a relation that views,
// derived streams or INSERT queries read, or INSERT queries write into.
func DependentsError(r *Relation, deps []*Relation) *pgerr.Error {
	var readers, writers, undo []string
	for _, d := range deps {
		var label string
		switch d.Kind {
		case KindInsert:
			label = "query " + d.QueryName()
			undo = append(undo, "TERMINATE "+d.QueryName())
		case KindView:
			label = "view " + d.Name
			undo = append(undo, "DROP TABLE "+d.Name)
		default:
			label = strings.ToLower(string(d.Kind)) + " " + d.Name
			undo = append(undo, "DROP "+string(d.Kind)+" "+d.Name)
		}
		if d.Into == strings.ToLower(r.Name) {
			writers = append(writers, label)
		} else {
			readers = append(readers, label)
		}
	}
	var detail []string
	if len(readers) > 0 {
		detail = append(detail, fmt.Sprintf("%s %s %s", strings.Join(readers, ", "), map[bool]string{true: "reads", false: "read"}[len(readers) == 1], r.Name))
	}
	if len(writers) > 0 {
		detail = append(detail, fmt.Sprintf("%s %s into %s", strings.Join(writers, ", "), map[bool]string{true: "writes", false: "write"}[len(writers) == 1], r.Name))
	}
	return pgerr.New(pgerr.DependentObjectsStillExist,
		"cannot drop %s %s because other objects depend on it", strings.ToLower(string(r.Kind)), r.Name).
		WithDetail("%s.", strings.Join(detail, "; ")).
		WithHint("Run %s first.", strings.Join(undo, ", "))
}

// PartitionerName returns the canonical name of a partitioner given in a
// WITH option (any spelling kafka.ParsePartitioner accepts), "" for
// murmur2, the default.
func PartitionerName(name string) (string, error) {
	p, err := kafka.ParsePartitioner(name)
	if err != nil {
		return "", err
	}
	if p.Name == kafka.Murmur2 {
		return "", nil
	}
	return p.Name, nil
}

// PartitionerOf is the partitioner of the relation's keys.
func (r *Relation) PartitionerOf() kafka.Partitioner { return kafka.PartitionerOf(r.Partitioner) }
