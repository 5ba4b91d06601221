package srfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"
)

const (
	typeAvro     = "AVRO"
	typeProtobuf = "PROTOBUF"
	typeJSON     = "JSON"
)

// schemaRequest is the body of a registration, lookup or compatibility
// check. Other fields the real API takes (id, version, metadata, ruleSet)
// are ignored.
type schemaRequest struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType"`
	References []reference `json:"references"`
}

// candidate is a schema from a request, validated against the registry's
// state.
type candidate struct {
	typ  string
	text string
	refs []reference
	key  string
	avro avro.Schema // the parsed schema when typ is AVRO
}

// prepareLocked validates a schema from a request: its type is known, its
// references exist, and an Avro or JSON schema parses. mu must be held,
// as references are resolved against the registry's subjects.
func (r *Registry) prepareLocked(req *schemaRequest) (*candidate, *apiError) {
	c := &candidate{typ: strings.ToUpper(req.SchemaType), text: req.Schema, refs: req.References}
	if c.typ == "" {
		c.typ = typeAvro
	}
	switch c.typ {
	case typeAvro, typeProtobuf, typeJSON:
	default:
		return nil, errInvalidSchema("Invalid schema type %s", req.SchemaType)
	}
	if strings.TrimSpace(c.text) == "" {
		return nil, errInvalidSchema("Empty schema")
	}
	for _, ref := range c.refs {
		if _, aerr := r.resolveRefLocked(ref); aerr != nil {
			return nil, aerr
		}
	}
	switch c.typ {
	case typeAvro:
		s, err := r.parseAvroLocked(c.text, c.refs)
		if err != nil {
			return nil, errInvalidSchema("Invalid schema %s with refs %v of type AVRO, details: %v", c.text, c.refs, err)
		}
		c.avro = s
	case typeJSON:
		if !json.Valid([]byte(c.text)) {
			return nil, errInvalidSchema("Invalid schema %s of type JSON, details: not valid JSON", c.text)
		}
	}
	c.key = schemaKey(c.typ, c.text, c.refs)
	return c, nil
}

// schemaKey is a schema's identity for deduplication: its type, its text
// with insignificant JSON whitespace removed (Avro and JSON schemas) or
// trimmed (Protobuf), and its references. The real registry compares a
// normalized form of the parsed schema; this is close enough for schemas
// that differ only in formatting.
func schemaKey(typ, text string, refs []reference) string {
	norm := strings.TrimSpace(text)
	if typ != typeProtobuf {
		var b bytes.Buffer
		if json.Compact(&b, []byte(text)) == nil {
			norm = b.String()
		}
	}
	var k strings.Builder
	k.WriteString(typ)
	k.WriteByte(0)
	k.WriteString(norm)
	for _, ref := range refs {
		k.WriteByte(0)
		k.WriteString(ref.Name)
		k.WriteByte(0)
		k.WriteString(ref.Subject)
		k.WriteByte(0)
		k.WriteString(strconv.Itoa(ref.Version))
	}
	return k.String()
}

// resolveRefLocked returns the schema a reference names. mu must be held.
func (r *Registry) resolveRefLocked(ref reference) (*schemaRecord, *apiError) {
	v := versionArg{n: ref.Version, latest: ref.Version == -1}
	x, aerr := r.findVersionLocked(ref.Subject, v, false)
	if aerr != nil {
		return nil, errInvalidSchema("Invalid schema reference %q to subject %q version %d: %s",
			ref.Name, ref.Subject, ref.Version, aerr.msg)
	}
	return r.schemaLocked(x.id), nil
}

// parseAvroLocked parses an Avro schema after the schemas it references,
// transitively, so that the named types they define resolve. Each parse
// gets a cache of its own: hamba/avro's default cache is global, and two
// versions of a record would otherwise see each other's definition. mu
// must be held.
func (r *Registry) parseAvroLocked(text string, refs []reference) (avro.Schema, error) {
	cache := &avro.SchemaCache{}
	seen := make(map[*schemaRecord]bool)
	var load func(refs []reference, depth int) error
	load = func(refs []reference, depth int) error {
		if depth > 32 {
			return fmt.Errorf("schema references nest deeper than 32")
		}
		for _, ref := range refs {
			rec, aerr := r.resolveRefLocked(ref)
			if aerr != nil {
				return aerr
			}
			if seen[rec] {
				continue
			}
			seen[rec] = true
			if rec.typ != typeAvro {
				return fmt.Errorf("reference %q is a %s schema", ref.Name, rec.typ)
			}
			if err := load(rec.refs, depth+1); err != nil {
				return err
			}
			if _, err := avro.ParseWithCache(rec.text, "", cache); err != nil {
				return fmt.Errorf("reference %q: %w", ref.Name, err)
			}
		}
		return nil
	}
	if err := load(refs, 0); err != nil {
		return nil, err
	}
	return avro.ParseWithCache(text, "", cache)
}

// versionArg is a version from a URL: a number or latest.
type versionArg struct {
	n      int
	latest bool
}

// parseVersion parses a version path segment as the real registry does:
// "latest" (or -1), or a number in [1, 2^31-1].
func parseVersion(s string) (versionArg, *apiError) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "latest") || t == "-1" {
		return versionArg{latest: true}, nil
	}
	n, err := strconv.ParseInt(t, 10, 32)
	if err != nil || n < 1 {
		return versionArg{}, errInvalidVersion(s)
	}
	return versionArg{n: int(n)}, nil
}
