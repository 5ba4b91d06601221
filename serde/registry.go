package serde

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// Registry is a Confluent-compatible schema registry as basin uses it: it
// fetches the writer schema of each record it reads by the id in the
// record, parses it once and keeps it (ids are immutable), and registers
// the schemas basin writes, once per subject and schema.
//
// A registry that cannot be reached (or answers with a server error) is
// ErrRegistryUnavailable: a persistent query retries the record later
// rather than skip it (Unavailable). A registry that answers that the
// schema does not exist is a property of the record: it goes to the
// processing log.
type Registry struct {
	cl      *sr.Client
	timeout time.Duration

	mu struct {
		sync.Mutex
		byID map[int]*writerSchema
		// missing notes the ids the registry said it does not have,
		// and when, so a topic full of them asks once a minute rather
		// than once a record.
		missing map[int]missing
		// ids are the ids of the schemas registered, by subject and
		// schema text.
		ids map[registered]int
	}
}

type registered struct{ subject, text string }

// missing is an id the registry answered it does not have: when, and
// the answer.
type missing struct {
	at  time.Time
	err error
}

// writerSchema is a schema of the registry, parsed: an Avro schema, a
// Protobuf file (and for writing, its message md) or a JSON Schema,
// which is kept as text (JSON_SR reads by field name, as JSON does).
type writerSchema struct {
	typ   sr.SchemaType
	text  string
	avro  avro.Schema
	proto protoreflect.FileDescriptor
	md    protoreflect.MessageDescriptor
}

// RegistryOptions say how to reach a schema registry.
type RegistryOptions struct {
	// URLs are the registry's base URLs; requests go to the first that
	// answers.
	URLs []string
	// User and Password are HTTP basic authentication's, when User is
	// set.
	User, Password string
	// TLS configures https URLs (nil: the system's roots).
	TLS *tls.Config
	// Timeout bounds one request, 10s when zero.
	Timeout time.Duration
}

// ErrRegistryUnavailable is the error of a schema registry that did not
// answer, or answered with a server error: the record is fine, the
// registry is not, and the read should be tried again.
var ErrRegistryUnavailable = errors.New("schema registry unavailable")

// missingTTL is how long an id the registry does not have is taken as
// missing without asking again.
const missingTTL = time.Minute

// NewRegistry returns a client of the registry o names. It makes no
// request.
func NewRegistry(o RegistryOptions) (*Registry, error) {
	if len(o.URLs) == 0 {
		return nil, errors.New("schema registry: no URL")
	}
	for _, u := range o.URLs {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("schema registry URL %q: want http:// or https://", u)
		}
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.TLS != nil {
		tr.TLSClientConfig = o.TLS
	}
	opts := []sr.ClientOpt{sr.URLs(o.URLs...), sr.HTTPClient(&http.Client{Transport: tr, Timeout: o.Timeout}), sr.UserAgent("basin")}
	if o.User != "" {
		opts = append(opts, sr.BasicAuth(o.User, o.Password))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("schema registry: %w", err)
	}
	r := &Registry{cl: cl, timeout: o.Timeout}
	r.mu.byID = make(map[int]*writerSchema)
	r.mu.missing = make(map[int]missing)
	r.mu.ids = make(map[registered]int)
	return r, nil
}

// registryError classifies an error of the registry client: a response
// of the registry itself (4xx) is returned as a pgerr with its message;
// anything else (no answer, 5xx, a timeout) wraps
// ErrRegistryUnavailable.
func registryError(what string, err error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) && re.StatusCode >= 400 && re.StatusCode < 500 && re.StatusCode != http.StatusTooManyRequests &&
		re.StatusCode != http.StatusUnauthorized && re.StatusCode != http.StatusForbidden && re.StatusCode != http.StatusRequestTimeout {
		code := pgerr.InvalidParameterValue
		switch re.ErrorCode {
		case 40401, 40402, 40403:
			code = pgerr.UndefinedObject
		case 409, 42201, 42202:
			code = pgerr.InvalidSchemaDefinition
		}
		return pgerr.New(code, "schema registry: %s: %s (error %d)", what, re.Message, re.ErrorCode)
	}
	return unavailableError{pgerr.New(pgerr.IOError, "schema registry unavailable: %s: %v", what, err).
		WithHint("The query retries; check that the registry (--schema-registry) is up and reachable.")}
}

// unavailableError is a registry that could not be asked: a pgerr
// (58030) that is also ErrRegistryUnavailable.
type unavailableError struct{ pe *pgerr.Error }

func (e unavailableError) Error() string   { return e.pe.Error() }
func (e unavailableError) Unwrap() []error { return []error{e.pe, ErrRegistryUnavailable} }

// Unavailable reports whether err is a registry that could not be asked
// (ErrRegistryUnavailable): the operation should be retried, not the
// record skipped.
func Unavailable(err error) bool { return errors.Is(err, ErrRegistryUnavailable) }

// schemaByID returns the registry's schema of id, parsed.
func (r *Registry) schemaByID(id int) (*writerSchema, error) {
	r.mu.Lock()
	ws, ok := r.mu.byID[id]
	m, gone := r.mu.missing[id]
	r.mu.Unlock()
	if ok {
		return ws, nil
	}
	if gone && time.Since(m.at) < missingTTL {
		return nil, m.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	s, err := r.cl.SchemaByID(ctx, id)
	if err != nil {
		err = registryError(fmt.Sprintf("schema id %d", id), err)
		if !Unavailable(err) {
			r.mu.Lock()
			r.mu.missing[id] = missing{time.Now(), err}
			r.mu.Unlock()
		}
		return nil, err
	}
	ws, err = r.parse(s)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	r.mu.Lock()
	r.mu.byID[id] = ws
	delete(r.mu.missing, id)
	r.mu.Unlock()
	return ws, nil
}

// parse parses a schema of the registry; an Avro schema's references are
// parsed first, so that the names they define resolve.
func (r *Registry) parse(s sr.Schema) (*writerSchema, error) {
	ws := &writerSchema{typ: s.Type, text: s.Schema}
	switch s.Type {
	case sr.TypeAvro:
		names := &avro.SchemaCache{}
		if err := r.parseAvroRefs(s.References, names, 0); err != nil {
			return nil, err
		}
		a, err := avro.ParseWithCache(s.Schema, "", names)
		if err != nil {
			return nil, pgerr.New(pgerr.InvalidSchemaDefinition, "the registry's Avro schema does not parse: %v", err)
		}
		ws.avro = a
	case sr.TypeProtobuf:
		if len(s.References) > 0 {
			return nil, pgerr.New(pgerr.FeatureNotSupported, "the registry's Protobuf schema imports other subjects' schemas (references), which basin does not read yet")
		}
		fd, err := ParseProtobufSchema(s.Schema)
		if err != nil {
			return nil, err
		}
		ws.proto = fd
		if fd.Messages().Len() > 0 {
			ws.md = fd.Messages().Get(0)
		}
	}
	return ws, nil
}

func (r *Registry) parseAvroRefs(refs []sr.SchemaReference, names *avro.SchemaCache, depth int) error {
	if depth > 16 {
		return pgerr.New(pgerr.InvalidSchemaDefinition, "the registry's schema references nest deeper than 16")
	}
	for _, ref := range refs {
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
		s, err := r.cl.SchemaByVersion(ctx, ref.Subject, ref.Version)
		cancel()
		if err != nil {
			return registryError(fmt.Sprintf("reference %s version %d", ref.Subject, ref.Version), err)
		}
		if err := r.parseAvroRefs(s.References, names, depth+1); err != nil {
			return err
		}
		if _, err := avro.ParseWithCache(s.Schema.Schema, "", names); err != nil {
			return pgerr.New(pgerr.InvalidSchemaDefinition, "the registry's Avro schema %s version %d does not parse: %v", ref.Subject, ref.Version, err)
		}
	}
	return nil
}

// Latest returns the id and the parsed latest version of subject.
func (r *Registry) latest(ctx context.Context, subject string) (int, *writerSchema, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	s, err := r.cl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		return 0, nil, registryError(fmt.Sprintf("the latest schema of subject %s", subject), err)
	}
	ws, err := r.parse(s.Schema)
	if err != nil {
		return 0, nil, fmt.Errorf("subject %s version %d: %w", subject, s.Version, err)
	}
	r.mu.Lock()
	r.mu.byID[s.ID] = ws
	r.mu.Unlock()
	return s.ID, ws, nil
}

// register registers schema text of type typ under subject (or finds it
// registered) and returns its id; a schema registered before by this
// Registry is not asked for again.
func (r *Registry) register(ctx context.Context, subject string, typ sr.SchemaType, text string) (int, error) {
	k := registered{subject, text}
	r.mu.Lock()
	id, ok := r.mu.ids[k]
	r.mu.Unlock()
	if ok {
		return id, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	s, err := r.cl.CreateSchema(ctx, subject, sr.Schema{Schema: text, Type: typ})
	if err != nil {
		return 0, registryError(fmt.Sprintf("registering a schema under subject %s", subject), err)
	}
	r.mu.Lock()
	r.mu.ids[k] = s.ID
	r.mu.Unlock()
	return s.ID, nil
}

// ValueSubject and KeySubject are the registry subjects of a topic's
// record values and keys (the TopicNameStrategy).
func ValueSubject(topic string) string { return topic + "-value" }

// KeySubject: see ValueSubject.
func KeySubject(topic string) string { return topic + "-key" }

// Columns returns the columns of one part of topic's records (part is
// "key" or "value") in format format, from the registry's schema: the
// one of id when id is not 0 (<part>_schema_id), else the latest under
// the topic's subject of the part. name is the schema's full name (an
// Avro record's, a Protobuf message's). A key's schema that is not a
// record (an Avro primitive, a JSON scalar) is one key column, ROWKEY,
// as ksqlDB names it.
func (r *Registry) Columns(ctx context.Context, part, format, topic string, id int) (cols []catalog.Column, name string, err error) {
	subject := ValueSubject(topic)
	if part == "key" {
		subject = KeySubject(topic)
	}
	var ws *writerSchema
	if id != 0 {
		ws, err = r.schemaByID(id)
	} else {
		_, ws, err = r.latest(ctx, subject)
	}
	if err != nil {
		var pe *pgerr.Error
		if errors.As(err, &pe) && pe.Code == pgerr.UndefinedObject {
			pe.Hint = fmt.Sprintf("Register the topic's %s schema under subject %s, or list the columns.", part, subject)
		}
		return nil, "", err
	}
	if want := schemaTypeOf(format); ws.typ != want {
		return nil, "", pgerr.New(pgerr.InvalidParameterValue, "the registry's %s schema of topic %s is %s, and %s_format is '%s'", part, topic, ws.typ, part, format)
	}
	switch ws.typ {
	case sr.TypeProtobuf:
		if ws.md == nil {
			return nil, "", pgerr.New(pgerr.InvalidSchemaDefinition, "the registry's Protobuf schema of topic %s has no message", topic)
		}
		cols, err = ProtobufColumns(ws.md)
		return cols, string(ws.md.FullName()), err
	case sr.TypeJSON:
		if cols, err = JSONSchemaColumns(ws.text); err != nil && part == "key" {
			return []catalog.Column{{Name: "ROWKEY", Type: jsonSchemaColumnType(json.RawMessage(ws.text), 0)}}, "", nil
		}
		return cols, "", err
	}
	if n, ok := ws.avro.(avro.NamedSchema); ok {
		name = n.FullName()
	}
	if _, ok := derefAvro(ws.avro).(*avro.RecordSchema); !ok && part == "key" {
		c := catalog.Column{Name: "ROWKEY"}
		c.Type, c.Precision, c.Scale = avroColumnType(ws.avro, 0)
		return []catalog.Column{c}, "", nil
	}
	cols, err = AvroColumns(ws.avro)
	return cols, name, err
}

// RegistryFormat reports whether value or key format f keeps its schemas
// in a schema registry.
func RegistryFormat(f string) bool {
	switch strings.ToLower(f) {
	case valueFormatAvro, valueFormatProtobuf, valueFormatJSONSR:
		return true
	}
	return false
}

// schemaTypeOf is the registry's schema type of format f.
func schemaTypeOf(f string) sr.SchemaType {
	switch strings.ToLower(f) {
	case valueFormatProtobuf:
		return sr.TypeProtobuf
	case valueFormatJSONSR:
		return sr.TypeJSON
	}
	return sr.TypeAvro
}
