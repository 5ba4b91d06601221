// Package srfake is an in-process schema registry for tests: a test double
// that speaks the Confluent Schema Registry's REST API over real HTTP, as
// franz-go's kfake is a Kafka broker that speaks the real Kafka protocol.
// Code under test points its ordinary client (franz-go's pkg/sr,
// Confluent's serializers, basin's own) at URL() and cannot tell the
// difference for the subset below.
//
//	reg, err := srfake.New(srfake.WithBasicAuth("u", "p"))
//	...
//	defer reg.Close()
//	cl, _ := sr.NewClient(sr.URLs(reg.URL()), sr.BasicAuth("u", "p"))
//
// # What it implements
//
//	POST   /subjects/{subject}/versions              register; {"id": N}
//	POST   /subjects/{subject}                       look a schema up under a subject
//	GET    /subjects                                 ?deleted=true
//	GET    /subjects/{subject}/versions              ?deleted=true
//	GET    /subjects/{subject}/versions/{v|latest}   ?deleted=true
//	GET    /subjects/{subject}/versions/{v}/schema   the schema text alone
//	DELETE /subjects/{subject}                       soft; ?permanent=true hard
//	DELETE /subjects/{subject}/versions/{v}          soft; ?permanent=true hard
//	GET    /schemas/ids/{id}                         {"schema", "schemaType", "references"}
//	GET    /schemas/ids/{id}/schema                  the schema text alone
//	GET    /schemas/ids/{id}/subjects                ?deleted=true
//	GET    /schemas/ids/{id}/versions                ?deleted=true
//	GET    /schemas/types
//	GET    /config, PUT /config, DELETE /config
//	GET    /config/{subject}                         ?defaultToGlobal=true
//	PUT    /config/{subject}, DELETE /config/{subject}
//	POST   /compatibility/subjects/{subject}/versions/{v|latest}   ?verbose=true
//	POST   /compatibility/subjects/{subject}/versions              against all versions
//
// Schema types are AVRO (the default when schemaType is absent), PROTOBUF
// and JSON. Ids are global: the same schema (same type, same text up to
// JSON whitespace, same references) gets the same id under every subject,
// and registering it again under a subject where it is already registered
// returns its id without a new version. References must name an existing
// subject version; Avro references are parsed first, so the named types
// they define resolve in the schema that refers to them.
//
// Compatibility levels are the real seven (NONE, BACKWARD, FORWARD, FULL
// and their _TRANSITIVE forms; BACKWARD by default), global and per
// subject. A registration that breaks the subject's level is refused with
// HTTP 409, as by the real registry. Avro schemas are checked by Avro's
// schema resolution rules (github.com/hamba/avro/v2): BACKWARD means the
// new schema can read what the old one wrote, so adding a field with a
// default or removing a field is compatible, while adding a field without
// a default or changing a field's type to one it cannot be promoted from is
// not. Protobuf and JSON schemas are only checked for being of the same
// type as the version they are compared with: any such schema is accepted.
//
// Errors are the real registry's: HTTP status plus a JSON body
// {"error_code": N, "message": "..."} with its codes (40401 subject, 40402
// version, 40403 schema not found, 40404 to 40408 for deletion and config
// states, 42201 invalid schema, 42202 invalid version, 42203 invalid
// compatibility level, 42206 reference exists), and messages close to its
// wording. Responses have Content-Type application/vnd.schemaregistry.v1+json;
// requests may send that, application/vnd.schemaregistry+json,
// application/json or application/octet-stream (anything else is 415).
//
// # Test controls
//
// WithBasicAuth makes every request need basic authentication (401
// otherwise); WithCompatibility sets the global level it starts with. SetDown(true) makes every request fail with 503 until
// SetDown(false); the registry's state is kept. Requests counts requests
// received, so a test can wait until a client has tried (and retried)
// rather than sleep.
//
// # Where it differs from the real registry
//
//   - State is in memory, in one process; there is no Kafka-backed
//     _schemas topic, no leader election, no cluster.
//   - Not implemented: schema contexts (/contexts/...), modes (/mode,
//     IMPORT with explicit ids and versions: an id or version in a
//     registration body is ignored), GET /schemas and /schemas/guids,
//     metadata and rule sets (ignored), the normalize, deletedOnly,
//     subjectPrefix and format parameters (ignored), the referencedby
//     endpoint, exporters, and the server's own /v1/metadata endpoints.
//   - Schema identity compares the text with JSON whitespace removed, not
//     the real registry's normalized parsed form: two Avro schemas that
//     differ in, say, the order of a field's attributes are different
//     schemas here. Schemas are returned as first registered, where the
//     real registry returns its canonical rendering.
//   - schemaType is left out of every response for Avro schemas. Whether
//     the real registry sends "AVRO" varies with the endpoint and release;
//     clients read an absent schemaType as AVRO.
//   - The 409 of an incompatible registration carries error_code 409, as
//     older releases of the real registry do; recent ones send 40901.
//     Clients go by the HTTP status.
//   - Protobuf and JSON schemas are not parsed (JSON only has to be valid
//     JSON) and their compatibility is not checked, see above: any
//     schema of the subject's type is compatible, under every level. A
//     .proto's imports are not resolved, so one importing the files the
//     real registry provides without a reference (google/protobuf/*,
//     google/type/*, confluent/meta.proto, confluent/type/decimal.proto)
//     registers as there, and so does one importing anything else.
//   - SetDown's 503 is what a proxy in front of a dead registry sends; the
//     real registry itself answers 50001-50003 with HTTP 500 when its
//     store is unavailable.
//   - An unknown path or method is answered 404 with error_code 404.
//
// # Structure
//
// registry.go has the server's lifecycle and what applies to every
// request (SetDown, authentication, content type); api*.go have one file
// per group of endpoints, each handler computing its answer under the
// registry's mutex and api.go's handle writing it after the mutex is
// released; store.go has the data model (schemas by id, subjects with
// their versions) and registration; schema.go validates and parses
// schemas; compat.go has the compatibility check. To see what a client
// sends, point it at a registry and log in a wrapping http.Handler, or read
// Requests() to see whether it sent anything at all.
package srfake
