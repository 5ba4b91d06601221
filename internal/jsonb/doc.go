// Package jsonb is the JSON of Postgres's json and jsonb types: the
// parser with Postgres's errors, jsonb's canonical text, and the
// operations the operators and functions over both need (field and
// element access, containment, key existence, concatenation,
// ordering).
//
// Values travel through the engine as text (catalog.JSONText): a jsonb
// value as its canonical text, a json value as given. An operation
// parses its operands, works on the tree and writes the result back.
// Parsing per operation costs more than a binary form would, but keeps
// one representation on disk, in Kafka records and on the wire, where
// the text is what every side wants.
//
// # Layers
//
// jsonb.go is the parser (Parse for jsonb, ParseJSON for json, with
// Postgres's messages and details: "Expected \":\", but found \"1\".")
// and the writers (Text, Pretty, JSONText). ops.go is what the
// operators and functions need: Field, Index and Path (-> and #>),
// AsText (->>), Contains (@>), Exists (?), Concat (||), Compare (jsonb's
// btree order) and EqualityKey (grouping).
//
// # Debugging
//
// A value's canonical text is what a jsonb column stores and what the
// wire sends, so a wrong answer is usually visible as text: compare
// Canonical(input) with Postgres's output for the same literal.
//
// jsonb imports internal/pgerr: its errors carry Postgres's SQLSTATEs.
package jsonb
