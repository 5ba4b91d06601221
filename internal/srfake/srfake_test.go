package srfake_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/goleak"

	"github.com/basindb/basin/internal/srfake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Avro schemas of one record in the evolutions the tests need.
const (
	orderV1 = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"item","type":"string"}]}`
	// orderV2 adds an optional field with a default: BACKWARD compatible.
	orderV2 = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"item","type":"string"},
		{"name":"note","type":["null","string"],"default":null}]}`
	// orderNoDefault adds a field without a default: a reader of this schema
	// cannot read data written with orderV1.
	orderNoDefault = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"item","type":"string"},
		{"name":"qty","type":"int"}]}`
	// orderItemInt changes item's type from string to int.
	orderItemInt = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"item","type":"int"}]}`
	// orderNoItem removes item (which has no default): BACKWARD compatible
	// (the new reader ignores it), not FORWARD (an old reader needs it).
	orderNoItem = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"}]}`
)

type env struct {
	reg *srfake.Registry
	cl  *sr.Client
	ctx context.Context
}

func start(t *testing.T, opts ...srfake.Option) *env {
	t.Helper()
	reg, err := srfake.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	return &env{reg: reg, cl: client(t, reg), ctx: context.Background()}
}

// client is a franz-go registry client of reg with its own transport, whose
// connections are closed when the test ends.
func client(t *testing.T, reg *srfake.Registry, opts ...sr.ClientOpt) *sr.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	opts = append([]sr.ClientOpt{
		sr.URLs(reg.URL()),
		sr.HTTPClient(&http.Client{Transport: tr, Timeout: 10 * time.Second}),
	}, opts...)
	cl, err := sr.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func (e *env) register(t *testing.T, subject, schema string) int {
	t.Helper()
	id, err := e.cl.RegisterSchema(e.ctx, subject, sr.Schema{Schema: schema}, -1, -1)
	if err != nil {
		t.Fatalf("registering under %s: %v", subject, err)
	}
	return id
}

// wantErr checks that err is the registry's error with this HTTP status and
// error_code.
func wantErr(t *testing.T, err error, status, code int) {
	t.Helper()
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a registry error %d/%d", err, status, code)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("got %d/%d %q, want %d/%d", re.StatusCode, re.ErrorCode, re.Message, status, code)
	}
}

func TestRegisterLookupGet(t *testing.T) {
	e := start(t)
	id := e.register(t, "orders-value", orderV1)
	if id != 1 {
		t.Fatalf("first id = %d, want 1", id)
	}
	// The same schema again, even formatted differently: same id, no new
	// version.
	if again := e.register(t, "orders-value", strings.Join(strings.Fields(orderV1), " ")); again != id {
		t.Fatalf("re-registration id = %d, want %d", again, id)
	}
	// Under another subject: the same global id.
	if other := e.register(t, "archive-value", orderV1); other != id {
		t.Fatalf("id under another subject = %d, want %d", other, id)
	}
	id2 := e.register(t, "orders-value", orderV2)
	if id2 != 2 {
		t.Fatalf("second schema id = %d, want 2", id2)
	}

	versions, err := e.cl.SubjectVersions(e.ctx, "orders-value")
	if err != nil || !slices.Equal(versions, []int{1, 2}) {
		t.Fatalf("versions = %v, %v; want [1 2]", versions, err)
	}
	subjects, err := e.cl.Subjects(e.ctx)
	if err != nil || !slices.Equal(subjects, []string{"archive-value", "orders-value"}) {
		t.Fatalf("subjects = %v, %v", subjects, err)
	}

	s, err := e.cl.SchemaByID(e.ctx, id)
	if err != nil || s.Schema != orderV1 || s.Type != sr.TypeAvro {
		t.Fatalf("schema by id = %+v, %v", s, err)
	}
	text, err := e.cl.SchemaTextByID(e.ctx, id)
	if err != nil || text != orderV1 {
		t.Fatalf("schema text by id = %q, %v", text, err)
	}
	subs, err := e.cl.SubjectsByID(e.ctx, id)
	if err != nil || !slices.Equal(subs, []string{"archive-value", "orders-value"}) {
		t.Fatalf("subjects by id = %v, %v", subs, err)
	}
	svs, err := e.cl.SchemaVersionsByID(e.ctx, id)
	want := []sr.SubjectVersion{{Subject: "archive-value", Version: 1}, {Subject: "orders-value", Version: 1}}
	if err != nil || !slices.Equal(svs, want) {
		t.Fatalf("versions by id = %v, %v", svs, err)
	}

	latest, err := e.cl.SchemaByVersion(e.ctx, "orders-value", -1)
	if err != nil || latest.Subject != "orders-value" || latest.Version != 2 || latest.ID != id2 || latest.Schema.Schema != orderV2 {
		t.Fatalf("latest = %+v, %v", latest, err)
	}
	v1, err := e.cl.SchemaByVersion(e.ctx, "orders-value", 1)
	if err != nil || v1.Version != 1 || v1.ID != id {
		t.Fatalf("version 1 = %+v, %v", v1, err)
	}
	raw, err := e.cl.SchemaTextByVersion(e.ctx, "orders-value", 2)
	if err != nil || raw != orderV2 {
		t.Fatalf("raw version 2 = %q, %v", raw, err)
	}

	found, err := e.cl.LookupSchema(e.ctx, "orders-value", sr.Schema{Schema: orderV1})
	if err != nil || found.ID != id || found.Version != 1 || found.Subject != "orders-value" {
		t.Fatalf("lookup = %+v, %v", found, err)
	}
	_, err = e.cl.LookupSchema(e.ctx, "orders-value", sr.Schema{Schema: orderNoItem})
	wantErr(t, err, 404, 40403)
	_, err = e.cl.LookupSchema(e.ctx, "nope", sr.Schema{Schema: orderV1})
	wantErr(t, err, 404, 40401)

	// CreateSchema registers and then finds the version by the id's usages.
	ss, err := e.cl.CreateSchema(e.ctx, "third-value", sr.Schema{Schema: orderV2})
	if err != nil || ss.ID != id2 || ss.Version != 1 || ss.Subject != "third-value" {
		t.Fatalf("create = %+v, %v", ss, err)
	}
}

func TestSchemaTypes(t *testing.T) {
	e := start(t)
	jsonSchema := `{"type":"object","properties":{"a":{"type":"integer"}}}`
	protoSchema := "syntax = \"proto3\";\nmessage M { int64 a = 1; }\n"
	jid, err := e.cl.RegisterSchema(e.ctx, "j-value", sr.Schema{Schema: jsonSchema, Type: sr.TypeJSON}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := e.cl.RegisterSchema(e.ctx, "p-value", sr.Schema{Schema: protoSchema, Type: sr.TypeProtobuf}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := e.cl.SchemaByID(e.ctx, jid); err != nil || s.Type != sr.TypeJSON || s.Schema != jsonSchema {
		t.Fatalf("json schema = %+v, %v", s, err)
	}
	if s, err := e.cl.SchemaByVersion(e.ctx, "p-value", -1); err != nil || s.Type != sr.TypeProtobuf || s.ID != pid {
		t.Fatalf("protobuf schema = %+v, %v", s, err)
	}
	// The same text as another type is another schema.
	aid, err := e.cl.RegisterSchema(e.ctx, "a-value", sr.Schema{Schema: jsonSchema, Type: sr.TypeJSON}, -1, -1)
	if err != nil || aid != jid {
		t.Fatalf("same JSON schema under another subject: id %d, %v; want %d", aid, err, jid)
	}
	// Not JSON is not a JSON schema.
	_, err = e.cl.RegisterSchema(e.ctx, "j-value", sr.Schema{Schema: "{", Type: sr.TypeJSON}, -1, -1)
	wantErr(t, err, 422, 42201)
	// Changing a subject's type is incompatible under BACKWARD.
	_, err = e.cl.RegisterSchema(e.ctx, "j-value", sr.Schema{Schema: protoSchema, Type: sr.TypeProtobuf}, -1, -1)
	wantErr(t, err, 409, 409)
	// Any JSON schema is accepted as compatible with the previous one.
	if _, err := e.cl.RegisterSchema(e.ctx, "j-value", sr.Schema{Schema: `{"type":"string"}`, Type: sr.TypeJSON}, -1, -1); err != nil {
		t.Fatal(err)
	}

	// The wire: content type, and schemaType left out for Avro only.
	e.register(t, "avro-value", `"string"`)
	status, hdr, body := get(t, e.reg.URL()+"/subjects/avro-value/versions/latest", nil)
	if status != 200 || hdr.Get("Content-Type") != "application/vnd.schemaregistry.v1+json" {
		t.Fatalf("status %d, content type %q", status, hdr.Get("Content-Type"))
	}
	if want := `{"subject":"avro-value","version":1,"id":4,"schema":"\"string\""}`; body != want {
		t.Fatalf("body %s, want %s", body, want)
	}
	_, _, body = get(t, e.reg.URL()+"/schemas/ids/1", nil)
	if want := `{"schema":"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}","schemaType":"JSON"}`; body != want {
		t.Fatalf("body %s, want %s", body, want)
	}
	_, _, body = get(t, e.reg.URL()+"/schemas/types", nil)
	if body != `["JSON","PROTOBUF","AVRO"]` {
		t.Fatalf("types %s", body)
	}
}

// TestProtobufAndJSONSchemas registers .proto texts as producers write
// them (imports of well-known files, nested types, options) and JSON
// Schemas, and evolves both under FULL_TRANSITIVE: the registry does not
// parse either, so every schema of the subject's type is compatible,
// even one a real registry would refuse (a field's type changed).
func TestProtobufAndJSONSchemas(t *testing.T) {
	e := start(t, srfake.WithCompatibility("FULL_TRANSITIVE"))
	v1 := `syntax = "proto3";
package shop.v1;

import "google/protobuf/timestamp.proto";
import "confluent/meta.proto";

message Order {
  message Line { string sku = 1; }
  string customer = 1 [(confluent.field_meta) = { doc: "who" }];
  google.protobuf.Timestamp placed = 2;
  repeated Line lines = 3;
}
`
	v2 := strings.Replace(v1, "repeated Line lines = 3;", "repeated Line lines = 3;\n  optional string coupon = 4;", 1)
	retyped := strings.Replace(v1, "string customer = 1", "int64 customer = 1", 1)
	var ids []int
	for _, text := range []string{v1, v2, retyped} {
		if res, err := e.cl.CheckCompatibility(e.ctx, "orders-value", -1, sr.Schema{Schema: text, Type: sr.TypeProtobuf}); err != nil || !res.Is {
			t.Fatalf("check = %+v, %v", res, err)
		}
		id, err := e.cl.RegisterSchema(e.ctx, "orders-value", sr.Schema{Schema: text, Type: sr.TypeProtobuf}, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// The text comes back as registered, and only surrounding whitespace
	// is insignificant to its identity.
	if s, err := e.cl.SchemaByID(e.ctx, ids[0]); err != nil || s.Schema != v1 || s.Type != sr.TypeProtobuf {
		t.Fatalf("v1 = %+v, %v", s, err)
	}
	if id, err := e.cl.RegisterSchema(e.ctx, "orders-value", sr.Schema{Schema: "\n" + v2 + "  ", Type: sr.TypeProtobuf}, -1, -1); err != nil || id != ids[1] {
		t.Fatalf("v2 again: id %d, %v; want %d", id, err, ids[1])
	}
	if vs, err := e.cl.SubjectVersions(e.ctx, "orders-value"); err != nil || len(vs) != 3 {
		t.Fatalf("versions %v, %v", vs, err)
	}

	j1 := `{"type":"object","properties":{"qty":{"oneOf":[{"type":"null"},{"type":"integer"}]}}}`
	j2 := `{"type":"object","properties":{"qty":{"type":"string"}},"required":["qty"]}`
	for _, text := range []string{j1, j2} {
		if _, err := e.cl.RegisterSchema(e.ctx, "counts-value", sr.Schema{Schema: text, Type: sr.TypeJSON}, -1, -1); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReferences(t *testing.T) {
	e := start(t)
	address := `{"type":"record","name":"Address","namespace":"shop","fields":[{"name":"city","type":"string"}]}`
	customer := `{"type":"record","name":"Customer","namespace":"shop","fields":[
		{"name":"name","type":"string"},{"name":"address","type":"shop.Address"}]}`
	e.register(t, "address", address)
	ref := []sr.SchemaReference{{Name: "shop.Address", Subject: "address", Version: 1}}
	id, err := e.cl.RegisterSchema(e.ctx, "customer-value", sr.Schema{Schema: customer, References: ref}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.cl.SchemaByID(e.ctx, id)
	if err != nil || !slices.Equal(s.References, ref) {
		t.Fatalf("schema = %+v, %v", s, err)
	}
	// Without the reference, shop.Address is an unknown type.
	_, err = e.cl.RegisterSchema(e.ctx, "customer-value", sr.Schema{Schema: customer}, -1, -1)
	wantErr(t, err, 422, 42201)
	// A reference to nothing.
	bad := []sr.SchemaReference{{Name: "shop.Address", Subject: "address", Version: 7}}
	_, err = e.cl.RegisterSchema(e.ctx, "customer-value", sr.Schema{Schema: customer, References: bad}, -1, -1)
	wantErr(t, err, 422, 42201)
	// A referenced version cannot be deleted.
	err = e.cl.DeleteSchema(e.ctx, "address", 1, sr.SoftDelete)
	wantErr(t, err, 422, 42206)
}

func TestSoftDelete(t *testing.T) {
	e := start(t)
	id1 := e.register(t, "orders-value", orderV1)
	id2 := e.register(t, "orders-value", orderV2)

	// A hard delete needs a soft delete first.
	_, err := e.cl.DeleteSubject(e.ctx, "orders-value", sr.HardDelete)
	wantErr(t, err, 404, 40405)
	err = e.cl.DeleteSchema(e.ctx, "orders-value", 1, sr.HardDelete)
	wantErr(t, err, 404, 40407)

	deleted, err := e.cl.DeleteSubject(e.ctx, "orders-value", sr.SoftDelete)
	if err != nil || !slices.Equal(deleted, []int{1, 2}) {
		t.Fatalf("deleted = %v, %v", deleted, err)
	}
	_, err = e.cl.DeleteSubject(e.ctx, "orders-value", sr.SoftDelete)
	wantErr(t, err, 404, 40404)

	if subjects, err := e.cl.Subjects(e.ctx); err != nil || len(subjects) != 0 {
		t.Fatalf("subjects after soft delete = %v, %v", subjects, err)
	}
	shown := sr.WithParams(e.ctx, sr.ShowDeleted)
	if subjects, err := e.cl.Subjects(shown); err != nil || !slices.Equal(subjects, []string{"orders-value"}) {
		t.Fatalf("subjects with deleted = %v, %v", subjects, err)
	}
	_, err = e.cl.SubjectVersions(e.ctx, "orders-value")
	wantErr(t, err, 404, 40401)
	_, err = e.cl.SchemaByVersion(e.ctx, "orders-value", 1)
	wantErr(t, err, 404, 40401)
	if s, err := e.cl.SchemaByVersion(shown, "orders-value", 1); err != nil || s.ID != id1 {
		t.Fatalf("version 1 with deleted = %+v, %v", s, err)
	}
	// Readers of old records still get the schema by id.
	if s, err := e.cl.SchemaByID(e.ctx, id2); err != nil || s.Schema != orderV2 {
		t.Fatalf("schema by id after soft delete = %+v, %v", s, err)
	}

	// Registering again continues the version numbers, with the old id.
	if id := e.register(t, "orders-value", orderV1); id != id1 {
		t.Fatalf("re-registered id = %d, want %d", id, id1)
	}
	if s, err := e.cl.SchemaByVersion(e.ctx, "orders-value", -1); err != nil || s.Version != 3 || s.ID != id1 {
		t.Fatalf("latest after re-registering = %+v, %v", s, err)
	}
	if vs, err := e.cl.SubjectVersions(shown, "orders-value"); err != nil || !slices.Equal(vs, []int{1, 2, 3}) {
		t.Fatalf("versions with deleted = %v, %v", vs, err)
	}

	// One version: soft, again (40406), then hard.
	if err := e.cl.DeleteSchema(e.ctx, "orders-value", 3, sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	err = e.cl.DeleteSchema(e.ctx, "orders-value", 3, sr.SoftDelete)
	wantErr(t, err, 404, 40406)
	if err := e.cl.DeleteSchema(e.ctx, "orders-value", 3, sr.HardDelete); err != nil {
		t.Fatal(err)
	}
	if vs, err := e.cl.SubjectVersions(shown, "orders-value"); err != nil || !slices.Equal(vs, []int{1, 2}) {
		t.Fatalf("versions after hard delete = %v, %v", vs, err)
	}
	// The whole subject, hard: gone, ids with it.
	if vs, err := e.cl.DeleteSubject(e.ctx, "orders-value", sr.HardDelete); err != nil || !slices.Equal(vs, []int{1, 2}) {
		t.Fatalf("hard deleted = %v, %v", vs, err)
	}
	_, err = e.cl.SubjectVersions(shown, "orders-value")
	wantErr(t, err, 404, 40401)
	_, err = e.cl.SchemaByID(e.ctx, id1)
	wantErr(t, err, 404, 40403)
}

func TestCompatibility(t *testing.T) {
	e := start(t)
	check := func(subject, schema string) sr.CheckCompatibilityResult {
		t.Helper()
		res, err := e.cl.CheckCompatibility(sr.WithParams(e.ctx, sr.Verbose), subject, -1, sr.Schema{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// No subject yet: anything is compatible with its latest.
	if res := check("orders-value", orderNoDefault); !res.Is {
		t.Fatalf("check against no subject = %+v", res)
	}
	e.register(t, "orders-value", orderV1)

	for _, c := range []struct {
		name, schema string
		want         bool
	}{
		{"optional field with default", orderV2, true},
		{"new field without default", orderNoDefault, false},
		{"changed type", orderItemInt, false},
		{"removed field", orderNoItem, true},
	} {
		res := check("orders-value", c.schema)
		if res.Is != c.want {
			t.Errorf("%s: is_compatible = %v, want %v (%v)", c.name, res.Is, c.want, res.Messages)
		}
		if !res.Is && len(res.Messages) == 0 {
			t.Errorf("%s: incompatible without messages", c.name)
		}
	}

	// Registering an incompatible schema is a 409.
	_, err := e.cl.RegisterSchema(e.ctx, "orders-value", sr.Schema{Schema: orderNoDefault}, -1, -1)
	wantErr(t, err, 409, 409)
	e.register(t, "orders-value", orderV2)

	// Against a given version, and a version that is not there.
	res, err := e.cl.CheckCompatibility(e.ctx, "orders-value", 1, sr.Schema{Schema: orderItemInt})
	if err != nil || res.Is {
		t.Fatalf("check against version 1 = %+v, %v", res, err)
	}
	_, err = e.cl.CheckCompatibility(e.ctx, "orders-value", 9, sr.Schema{Schema: orderV2})
	wantErr(t, err, 404, 40402)
	_, err = e.cl.CheckCompatibility(e.ctx, "orders-value", -1, sr.Schema{Schema: "{not avro"})
	wantErr(t, err, 422, 42201)

	// Config: the global default, a subject without its own level, then
	// FORWARD for the subject, under which removing a field is not
	// compatible.
	if got := e.cl.Compatibility(e.ctx); got[0].Err != nil || got[0].Level != sr.CompatBackward {
		t.Fatalf("global compatibility = %+v", got[0])
	}
	got := e.cl.Compatibility(e.ctx, "orders-value")
	wantErr(t, got[0].Err, 404, 40408)
	got = e.cl.Compatibility(sr.WithParams(e.ctx, sr.DefaultToGlobal), "orders-value")
	if got[0].Err != nil || got[0].Level != sr.CompatBackward {
		t.Fatalf("subject compatibility defaulting to global = %+v", got[0])
	}
	set := e.cl.SetCompatibility(e.ctx, sr.SetCompatibility{Level: sr.CompatForward}, "orders-value")
	if set[0].Err != nil || set[0].Level != sr.CompatForward {
		t.Fatalf("set = %+v", set[0])
	}
	if got := e.cl.Compatibility(e.ctx, "orders-value"); got[0].Err != nil || got[0].Level != sr.CompatForward {
		t.Fatalf("subject compatibility = %+v", got[0])
	}
	if res := check("orders-value", orderNoItem); res.Is {
		t.Fatalf("removing a field under FORWARD = %+v", res)
	}
	// NONE takes anything.
	e.cl.SetCompatibility(e.ctx, sr.SetCompatibility{Level: sr.CompatNone}, "orders-value")
	e.register(t, "orders-value", orderItemInt)

	// Transitive: v2 of "t" is compatible with v1, v3 only with v2.
	e.cl.SetCompatibility(e.ctx, sr.SetCompatibility{Level: sr.CompatBackwardTransitive})
	e.register(t, "t-value", orderV1)
	e.register(t, "t-value", orderNoItem)
	withItemInt := `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},{"name":"item","type":"int","default":0}]}`
	_, err = e.cl.RegisterSchema(e.ctx, "t-value", sr.Schema{Schema: withItemInt}, -1, -1)
	wantErr(t, err, 409, 409)
	e.cl.SetCompatibility(e.ctx, sr.SetCompatibility{Level: sr.CompatBackward})
	e.register(t, "t-value", withItemInt)

	// An unknown level.
	status, _, body := do(t, "PUT", e.reg.URL()+"/config", `{"compatibility":"SIDEWAYS"}`, "application/json", nil)
	if status != 422 || !strings.Contains(body, `"error_code":42203`) {
		t.Fatalf("unknown level: %d %s", status, body)
	}
}

func TestErrors(t *testing.T) {
	e := start(t)
	e.register(t, "orders-value", orderV1)
	u := e.reg.URL()
	for _, c := range []struct {
		method, path, body, contentType string
		status, code                    int
	}{
		{"GET", "/subjects/nope/versions", "", "", 404, 40401},
		{"GET", "/subjects/nope/versions/latest", "", "", 404, 40401},
		{"GET", "/subjects/orders-value/versions/2", "", "", 404, 40402},
		{"GET", "/subjects/orders-value/versions/abc", "", "", 422, 42202},
		{"GET", "/subjects/orders-value/versions/0", "", "", 422, 42202},
		{"GET", "/subjects/orders-value/versions/2147483648", "", "", 422, 42202},
		{"GET", "/schemas/ids/99", "", "", 404, 40403},
		{"GET", "/schemas/ids/x", "", "", 404, 40403},
		{"POST", "/subjects/orders-value/versions", `{"schema":"{\"type\":\"record\"}"}`, "application/vnd.schemaregistry.v1+json", 422, 42201},
		{"POST", "/subjects/orders-value/versions", `{"schema":""}`, "application/json", 422, 42201},
		{"POST", "/subjects/orders-value/versions", `{"schema":"\"int\"","schemaType":"XML"}`, "application/json", 422, 42201},
		{"POST", "/subjects/orders-value/versions", `{"schema":`, "application/json", 400, 400},
		{"POST", "/subjects/orders-value/versions", `{"schema":"\"int\""}`, "text/plain", 415, 415},
		{"DELETE", "/subjects/nope", "", "", 404, 40401},
		{"GET", "/no/such/path", "", "", 404, 404},
	} {
		status, hdr, body := do(t, c.method, u+c.path, c.body, c.contentType, nil)
		var eb struct {
			ErrorCode int    `json:"error_code"`
			Message   string `json:"message"`
		}
		if err := json.Unmarshal([]byte(body), &eb); err != nil {
			t.Errorf("%s %s: body %q: %v", c.method, c.path, body, err)
			continue
		}
		if status != c.status || eb.ErrorCode != c.code || eb.Message == "" {
			t.Errorf("%s %s: %d %s, want %d with error_code %d", c.method, c.path, status, body, c.status, c.code)
		}
		if ct := hdr.Get("Content-Type"); ct != "application/vnd.schemaregistry.v1+json" {
			t.Errorf("%s %s: content type %q", c.method, c.path, ct)
		}
	}
	// The message names the subject, as the real registry's does.
	_, _, body := do(t, "GET", u+"/subjects/nope/versions", "", "", nil)
	if want := `{"error_code":40401,"message":"Subject 'nope' not found."}`; body != want {
		t.Fatalf("body %s, want %s", body, want)
	}
	// franz-go maps the code to its typed error.
	_, err := e.cl.SchemaByID(e.ctx, 99)
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.SchemaError() != sr.ErrSchemaNotFound {
		t.Fatalf("typed error of %v", err)
	}
}

func TestBasicAuth(t *testing.T) {
	reg, err := srfake.New(srfake.WithBasicAuth("alice", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	ctx := context.Background()

	_, err = client(t, reg).Subjects(ctx)
	wantErr(t, err, 401, 401)
	_, err = client(t, reg, sr.BasicAuth("alice", "wrong")).Subjects(ctx)
	wantErr(t, err, 401, 401)
	status, hdr, _ := do(t, "GET", reg.URL()+"/subjects", "", "", nil)
	if status != 401 || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("no credentials: %d, WWW-Authenticate %q", status, hdr.Get("WWW-Authenticate"))
	}

	cl := client(t, reg, sr.BasicAuth("alice", "s3cret"))
	id, err := cl.RegisterSchema(ctx, "s", sr.Schema{Schema: `"string"`}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := cl.SchemaByID(ctx, id); err != nil || s.Schema != `"string"` {
		t.Fatalf("schema = %+v, %v", s, err)
	}
}

func TestSetDown(t *testing.T) {
	e := start(t)
	id := e.register(t, "orders-value", orderV1)

	e.reg.SetDown(true)
	before := e.reg.Requests()
	_, err := e.cl.SchemaByID(e.ctx, id)
	wantErr(t, err, 503, 503)
	_, err = e.cl.RegisterSchema(e.ctx, "orders-value", sr.Schema{Schema: orderV2}, -1, -1)
	wantErr(t, err, 503, 503)
	if n := e.reg.Requests() - before; n != 2 {
		t.Fatalf("requests while down = %d, want 2", n)
	}

	// Back up with its data.
	e.reg.SetDown(false)
	if s, err := e.cl.SchemaByID(e.ctx, id); err != nil || s.Schema != orderV1 {
		t.Fatalf("schema after coming back = %+v, %v", s, err)
	}
	if vs, err := e.cl.SubjectVersions(e.ctx, "orders-value"); err != nil || !slices.Equal(vs, []int{1}) {
		t.Fatalf("versions after coming back = %v, %v", vs, err)
	}
}

func TestClose(t *testing.T) {
	reg, err := srfake.New()
	if err != nil {
		t.Fatal(err)
	}
	u := reg.URL()
	reg.Close()
	reg.Close()
	if resp, err := http.Get(u + "/subjects"); err == nil {
		resp.Body.Close()
		t.Fatal("a closed registry answered")
	}
}

func TestNewOptions(t *testing.T) {
	if _, err := srfake.New(srfake.WithCompatibility("SIDEWAYS")); err == nil {
		t.Fatal("New took an unknown level")
	}
	reg, err := srfake.New(srfake.WithCompatibility("FULL"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if got := client(t, reg).Compatibility(context.Background()); got[0].Level != sr.CompatFull {
		t.Fatalf("compatibility = %+v", got[0])
	}
}

// Order is the Go form of orderV1 for hamba/avro.
type Order struct {
	ID   int64  `avro:"id"`
	Item string `avro:"item"`
}

// OrderV2 is the Go form of orderV2.
type OrderV2 struct {
	ID   int64   `avro:"id"`
	Item string  `avro:"item"`
	Note *string `avro:"note"`
}

// frame puts a record's Avro binary in Confluent's wire format: magic byte
// 0, the schema id as a 4-byte big-endian integer, then the payload.
func frame(id int, payload []byte) []byte {
	b := make([]byte, 5, 5+len(payload))
	binary.BigEndian.PutUint32(b[1:5], uint32(id))
	return append(b, payload...)
}

// unframe splits a Confluent-framed record into schema id and payload.
func unframe(b []byte) (int, []byte, error) {
	if len(b) < 5 || b[0] != 0 {
		return 0, nil, errors.New("not a Confluent-framed record")
	}
	return int(binary.BigEndian.Uint32(b[1:5])), b[5:], nil
}

func TestWireFormatRoundTrip(t *testing.T) {
	e := start(t)
	id := e.register(t, "orders-value", orderV1)

	// Produce: encode with the writer schema, frame with its id.
	writer, err := avro.Parse(orderV1)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := avro.Marshal(writer, Order{ID: 42, Item: "kettle"})
	if err != nil {
		t.Fatal(err)
	}
	record := frame(id, payload)
	if record[0] != 0 || binary.BigEndian.Uint32(record[1:5]) != uint32(id) {
		t.Fatalf("frame header % x", record[:5])
	}

	// Consume: read the id, fetch the writer schema from the registry,
	// decode.
	gotID, body, err := unframe(record)
	if err != nil {
		t.Fatal(err)
	}
	fetched, err := e.cl.SchemaByID(e.ctx, gotID)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := avro.Parse(fetched.Schema)
	if err != nil {
		t.Fatal(err)
	}
	var got Order
	if err := avro.Unmarshal(ws, body, &got); err != nil {
		t.Fatal(err)
	}
	if want := (Order{ID: 42, Item: "kettle"}); got != want {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}

	// A consumer on the newer, BACKWARD-compatible schema reads the old
	// record by resolving its reader schema against the writer's.
	e.register(t, "orders-value", orderV2)
	latest, err := e.cl.SchemaByVersion(e.ctx, "orders-value", -1)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := avro.Parse(latest.Schema.Schema)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := avro.NewSchemaCompatibility().Resolve(rs, ws)
	if err != nil {
		t.Fatal(err)
	}
	var got2 OrderV2
	if err := avro.Unmarshal(resolved, body, &got2); err != nil {
		t.Fatal(err)
	}
	if want := (OrderV2{ID: 42, Item: "kettle"}); !reflect.DeepEqual(got2, want) {
		t.Fatalf("decoded with v2 %+v, want %+v", got2, want)
	}

	if _, _, err := unframe([]byte{1, 0, 0, 0, 1}); err == nil {
		t.Fatal("unframe took a bad magic byte")
	}
}

// get and do send a raw request, for what the client hides: status
// codes, headers and exact bodies.
func get(t *testing.T, url string, hdr http.Header) (int, http.Header, string) {
	t.Helper()
	return do(t, "GET", url, "", "", hdr)
}

func do(t *testing.T, method, url, body, contentType string, hdr http.Header) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}
