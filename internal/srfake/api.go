package srfake

import (
	"net/http"
	"strings"
)

// routes maps the API's endpoints to their handlers. Each handler computes
// its answer under mu and returns it; handle writes it after mu is
// released, so no response is written with mu held.
func (r *Registry) routes() *http.ServeMux {
	m := http.NewServeMux()
	h := func(pattern string, fn handlerFunc) { m.Handle(pattern, handle(fn)) }

	h("GET /{$}", func(*http.Request) (any, *apiError) { return struct{}{}, nil })

	h("GET /subjects", r.getSubjects)
	h("POST /subjects/{subject}", r.lookupSchema)
	h("DELETE /subjects/{subject}", r.deleteSubject)
	h("GET /subjects/{subject}/versions", r.getSubjectVersions)
	h("POST /subjects/{subject}/versions", r.registerSchema)
	h("GET /subjects/{subject}/versions/{version}", r.getSubjectVersion)
	h("GET /subjects/{subject}/versions/{version}/schema", r.getSubjectVersionSchema)
	h("DELETE /subjects/{subject}/versions/{version}", r.deleteSubjectVersion)

	h("GET /schemas/types", r.getSchemaTypes)
	h("GET /schemas/ids/{id}", r.getSchemaByID)
	h("GET /schemas/ids/{id}/schema", r.getSchemaTextByID)
	h("GET /schemas/ids/{id}/subjects", r.getSchemaSubjects)
	h("GET /schemas/ids/{id}/versions", r.getSchemaVersions)

	h("GET /config", r.getGlobalConfig)
	h("PUT /config", r.putGlobalConfig)
	h("DELETE /config", r.deleteGlobalConfig)
	h("GET /config/{subject}", r.getSubjectConfig)
	h("PUT /config/{subject}", r.putSubjectConfig)
	h("DELETE /config/{subject}", r.deleteSubjectConfig)

	h("POST /compatibility/subjects/{subject}/versions/{version}", r.checkCompatibility)
	h("POST /compatibility/subjects/{subject}/versions", r.checkCompatibility)

	// Anything else, including a known path with another method, gets the
	// registry's JSON 404 rather than the mux's plain-text one.
	h("/", func(*http.Request) (any, *apiError) {
		return nil, newError(http.StatusNotFound, codeNotFound, "HTTP 404 Not Found")
	})
	return m
}

// handlerFunc answers a request with a value to encode as JSON (or a
// rawBody, written as is), or with an error.
type handlerFunc func(*http.Request) (any, *apiError)

// rawBody is a response body written without JSON encoding: the raw
// schema endpoints return the schema text itself.
type rawBody string

func handle(fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		v, aerr := fn(req)
		switch {
		case aerr != nil:
			writeError(w, aerr)
		default:
			if raw, ok := v.(rawBody); ok {
				w.Header().Set("Content-Type", contentType)
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write([]byte(raw))
				return
			}
			writeJSON(w, http.StatusOK, v)
		}
	})
}

// flag reports whether a boolean query parameter is set to true.
func flag(req *http.Request, name string) bool {
	return strings.EqualFold(req.URL.Query().Get(name), "true")
}

// typeField is a schema type as responses carry it: absent for Avro, as the
// real registry leaves it out there.
func typeField(typ string) string {
	if typ == typeAvro {
		return ""
	}
	return typ
}

// subjectSchemaBody is a schema registered under a subject, as the version
// and lookup endpoints return it.
type subjectSchemaBody struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
}

func subjectSchemaOf(name string, v *version, rec *schemaRecord) subjectSchemaBody {
	return subjectSchemaBody{
		Subject:    name,
		Version:    v.version,
		ID:         rec.id,
		SchemaType: typeField(rec.typ),
		References: rec.refs,
		Schema:     rec.text,
	}
}
