package srfake

import (
	"net/http"
	"slices"
)

// schemaRecord is one schema with its global id. A record is never removed:
// re-registering a schema whose versions were all hard deleted gets its old
// id back.
type schemaRecord struct {
	id   int
	typ  string // "AVRO", "PROTOBUF" or "JSON"
	text string // as first registered
	refs []reference
	key  string // identity; see schemaKey
}

// reference is a schema reference as the API carries it.
type reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// version is one version of a subject.
type version struct {
	version int
	id      int
	deleted bool // soft deleted
}

// subject is a subject's versions, in ascending version order, and its
// subject-level compatibility ("" when it has none).
type subject struct {
	versions []*version
	compat   string
}

// schemaLocked returns the record for id, or nil. mu must be held.
func (r *Registry) schemaLocked(id int) *schemaRecord {
	if id < 1 || id > len(r.mu.schemas) {
		return nil
	}
	return r.mu.schemas[id-1]
}

// versionsLocked returns subject's versions, without the soft-deleted ones
// unless deleted is set; nil when there are none. mu must be held.
func (r *Registry) versionsLocked(name string, deleted bool) []*version {
	s := r.mu.subjects[name]
	if s == nil {
		return nil
	}
	var vs []*version
	for _, v := range s.versions {
		if deleted || !v.deleted {
			vs = append(vs, v)
		}
	}
	return vs
}

// findVersionLocked resolves a version of a subject as the read endpoints
// do: latest is the newest version that is not soft deleted (or the newest
// of all with deleted set). mu must be held.
func (r *Registry) findVersionLocked(name string, v versionArg, deleted bool) (*version, *apiError) {
	vs := r.versionsLocked(name, deleted)
	if len(vs) == 0 {
		return nil, errSubjectNotFound(name)
	}
	if v.latest {
		return vs[len(vs)-1], nil
	}
	for _, x := range vs {
		if x.version == v.n {
			return x, nil
		}
	}
	return nil, errVersionNotFound(v.n)
}

// levelLocked is the compatibility level that applies to a subject. mu must
// be held.
func (r *Registry) levelLocked(name string) string {
	if s := r.mu.subjects[name]; s != nil && s.compat != "" {
		return s.compat
	}
	return r.mu.compat
}

// usage is a subject and version a schema is registered under.
type usage struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// usagesLocked lists where schema id is registered, sorted by subject and
// version. mu must be held.
func (r *Registry) usagesLocked(id int, deleted bool) []usage {
	var us []usage
	for name, s := range r.mu.subjects {
		for _, v := range s.versions {
			if v.id == id && (deleted || !v.deleted) {
				us = append(us, usage{Subject: name, Version: v.version})
			}
		}
	}
	slices.SortFunc(us, func(a, b usage) int {
		if a.Subject != b.Subject {
			if a.Subject < b.Subject {
				return -1
			}
			return 1
		}
		return a.Version - b.Version
	})
	return us
}

// register adds the schema prepared as c to a subject and returns its id.
// A schema already registered under the subject (and not soft deleted)
// keeps its version and id; otherwise the schema must be compatible with
// the subject's versions under its level, and gets a new version, with the
// id the same schema has under any other subject or a new one.
func (r *Registry) register(name string, req *schemaRequest) (int, *apiError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, aerr := r.prepareLocked(req)
	if aerr != nil {
		return 0, aerr
	}
	live := r.versionsLocked(name, false)
	for _, v := range live {
		if r.schemaLocked(v.id).key == c.key {
			return v.id, nil
		}
	}
	msgs, aerr := r.checkLocked(r.levelLocked(name), c, live, false)
	if aerr != nil {
		return 0, aerr
	}
	if len(msgs) > 0 {
		return 0, newError(http.StatusConflict, codeIncompatible,
			"Schema being registered is incompatible with an earlier schema for subject \"%s\", details: %s",
			name, joinMessages(msgs))
	}
	rec := r.mu.byKey[c.key]
	if rec == nil {
		rec = &schemaRecord{id: len(r.mu.schemas) + 1, typ: c.typ, text: c.text, refs: c.refs, key: c.key}
		r.mu.schemas = append(r.mu.schemas, rec)
		r.mu.byKey[c.key] = rec
	}
	s := r.mu.subjects[name]
	if s == nil {
		s = &subject{}
		r.mu.subjects[name] = s
	}
	// Versions count on from the newest one kept, soft deleted or not, so
	// a version number is never reused while its old version is visible
	// with ?deleted=true.
	next := 1
	if n := len(s.versions); n > 0 {
		next = s.versions[n-1].version + 1
	}
	s.versions = append(s.versions, &version{version: next, id: rec.id})
	return rec.id, nil
}

// referencedLocked reports whether a version that is not soft deleted has a
// schema referring to subject name at version v. mu must be held.
func (r *Registry) referencedLocked(name string, v int) bool {
	for _, s := range r.mu.subjects {
		for _, x := range s.versions {
			if x.deleted {
				continue
			}
			for _, ref := range r.schemaLocked(x.id).refs {
				if ref.Subject == name && ref.Version == v {
					return true
				}
			}
		}
	}
	return false
}

// dropSubjectIfEmptyLocked forgets a subject with no versions and no
// config. mu must be held.
func (r *Registry) dropSubjectIfEmptyLocked(name string) {
	if s := r.mu.subjects[name]; s != nil && len(s.versions) == 0 && s.compat == "" {
		delete(r.mu.subjects, name)
	}
}
