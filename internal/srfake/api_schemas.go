package srfake

import (
	"net/http"
	"strconv"
)

// GET /schemas/types: the schema types the registry takes.
func (r *Registry) getSchemaTypes(*http.Request) (any, *apiError) {
	return []string{typeJSON, typeProtobuf, typeAvro}, nil
}

// schemaByIDLocked resolves the {id} of a /schemas/ids path. A schema is
// found while it is registered under some version, soft deleted or not:
// consumers still read records written with a soft-deleted schema, as with
// the real registry. mu must be held.
func (r *Registry) schemaByIDLocked(req *http.Request) (*schemaRecord, *apiError) {
	s := req.PathValue("id")
	id, err := strconv.Atoi(s)
	if err != nil {
		return nil, errSchemaIDNotFound(s)
	}
	rec := r.schemaLocked(id)
	if rec == nil || len(r.usagesLocked(id, true)) == 0 {
		return nil, errSchemaIDNotFound(s)
	}
	return rec, nil
}

// schemaBody is a schema by id as GET /schemas/ids/{id} returns it.
type schemaBody struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []reference `json:"references,omitempty"`
}

// GET /schemas/ids/{id}.
func (r *Registry) getSchemaByID(req *http.Request) (any, *apiError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, aerr := r.schemaByIDLocked(req)
	if aerr != nil {
		return nil, aerr
	}
	return schemaBody{Schema: rec.text, SchemaType: typeField(rec.typ), References: rec.refs}, nil
}

// GET /schemas/ids/{id}/schema: the schema text alone.
func (r *Registry) getSchemaTextByID(req *http.Request) (any, *apiError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, aerr := r.schemaByIDLocked(req)
	if aerr != nil {
		return nil, aerr
	}
	return rawBody(rec.text), nil
}

// GET /schemas/ids/{id}/subjects[?deleted=true]: the subjects the schema is
// registered under, sorted.
func (r *Registry) getSchemaSubjects(req *http.Request) (any, *apiError) {
	us, aerr := r.schemaUsages(req)
	if aerr != nil {
		return nil, aerr
	}
	names := []string{}
	for _, u := range us {
		if len(names) == 0 || names[len(names)-1] != u.Subject {
			names = append(names, u.Subject)
		}
	}
	return names, nil
}

// GET /schemas/ids/{id}/versions[?deleted=true]: the subject versions the
// schema is registered as.
func (r *Registry) getSchemaVersions(req *http.Request) (any, *apiError) {
	us, aerr := r.schemaUsages(req)
	if aerr != nil {
		return nil, aerr
	}
	return us, nil
}

// schemaUsages lists where the schema of a /schemas/ids path is registered.
// Like the real registry, it answers 40403 when there is nowhere (with
// soft-deleted versions left out unless deleted=true).
func (r *Registry) schemaUsages(req *http.Request) ([]usage, *apiError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, aerr := r.schemaByIDLocked(req)
	if aerr != nil {
		return nil, aerr
	}
	us := r.usagesLocked(rec.id, flag(req, "deleted"))
	if len(us) == 0 {
		return nil, errSchemaIDNotFound(req.PathValue("id"))
	}
	return us, nil
}
