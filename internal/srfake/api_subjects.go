package srfake

import (
	"net/http"
	"slices"
)

// GET /subjects[?deleted=true]: the subjects with a version that is not
// soft deleted (or with any version), sorted.
func (r *Registry) getSubjects(req *http.Request) (any, *apiError) {
	deleted := flag(req, "deleted")
	r.mu.Lock()
	defer r.mu.Unlock()
	names := []string{}
	for name := range r.mu.subjects {
		if len(r.versionsLocked(name, deleted)) > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// GET /subjects/{subject}/versions[?deleted=true]: the subject's version
// numbers, ascending.
func (r *Registry) getSubjectVersions(req *http.Request) (any, *apiError) {
	name := req.PathValue("subject")
	deleted := flag(req, "deleted")
	r.mu.Lock()
	defer r.mu.Unlock()
	vs := r.versionsLocked(name, deleted)
	if len(vs) == 0 {
		return nil, errSubjectNotFound(name)
	}
	ns := make([]int, len(vs))
	for i, v := range vs {
		ns[i] = v.version
	}
	return ns, nil
}

// POST /subjects/{subject}/versions: register a schema; answers {"id": N}.
func (r *Registry) registerSchema(req *http.Request) (any, *apiError) {
	var body schemaRequest
	if aerr := decodeBody(req, &body); aerr != nil {
		return nil, aerr
	}
	id, aerr := r.register(req.PathValue("subject"), &body)
	if aerr != nil {
		return nil, aerr
	}
	return struct {
		ID int `json:"id"`
	}{id}, nil
}

// POST /subjects/{subject}[?deleted=true]: whether a schema is registered
// under the subject, and as which version.
func (r *Registry) lookupSchema(req *http.Request) (any, *apiError) {
	name := req.PathValue("subject")
	deleted := flag(req, "deleted")
	var body schemaRequest
	if aerr := decodeBody(req, &body); aerr != nil {
		return nil, aerr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	vs := r.versionsLocked(name, deleted)
	if len(vs) == 0 {
		return nil, errSubjectNotFound(name)
	}
	c, aerr := r.prepareLocked(&body)
	if aerr != nil {
		return nil, aerr
	}
	// The newest matching version: a schema soft deleted and registered
	// again is found at its new version.
	for _, v := range slices.Backward(vs) {
		if rec := r.schemaLocked(v.id); rec.key == c.key {
			return subjectSchemaOf(name, v, rec), nil
		}
	}
	return nil, errSchemaNotFound()
}

// GET /subjects/{subject}/versions/{version}[?deleted=true].
func (r *Registry) getSubjectVersion(req *http.Request) (any, *apiError) {
	name := req.PathValue("subject")
	va, aerr := parseVersion(req.PathValue("version"))
	if aerr != nil {
		return nil, aerr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v, aerr := r.findVersionLocked(name, va, flag(req, "deleted"))
	if aerr != nil {
		return nil, aerr
	}
	return subjectSchemaOf(name, v, r.schemaLocked(v.id)), nil
}

// GET /subjects/{subject}/versions/{version}/schema: the schema text alone.
func (r *Registry) getSubjectVersionSchema(req *http.Request) (any, *apiError) {
	name := req.PathValue("subject")
	va, aerr := parseVersion(req.PathValue("version"))
	if aerr != nil {
		return nil, aerr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v, aerr := r.findVersionLocked(name, va, flag(req, "deleted"))
	if aerr != nil {
		return nil, aerr
	}
	return rawBody(r.schemaLocked(v.id).text), nil
}

// DELETE /subjects/{subject}[?permanent=true]: soft delete every version of
// the subject, or hard delete a subject already soft deleted. Answers the
// versions deleted.
func (r *Registry) deleteSubject(req *http.Request) (any, *apiError) {
	name := req.PathValue("subject")
	permanent := flag(req, "permanent")
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.versionsLocked(name, true)
	if len(all) == 0 {
		return nil, errSubjectNotFound(name)
	}
	live := r.versionsLocked(name, false)
	switch {
	case permanent && len(live) > 0:
		return nil, newError(http.StatusNotFound, codeSubjectNotSoftDeleted,
			"Subject '%s' was not deleted first before being permanently deleted", name)
	case !permanent && len(live) == 0:
		return nil, newError(http.StatusNotFound, codeSubjectSoftDeleted,
			"Subject '%s' was soft deleted.Set permanent=true to delete permanently", name)
	}
	var deleted []int
	if permanent {
		for _, v := range all {
			deleted = append(deleted, v.version)
		}
		r.mu.subjects[name].versions = nil
		r.dropSubjectIfEmptyLocked(name)
		return deleted, nil
	}
	for _, v := range live {
		if r.referencedLocked(name, v.version) {
			return nil, newError(http.StatusUnprocessableEntity, codeReferenceExists,
				"One or more references exist to the schema {subject=%s,version=%d}", name, v.version)
		}
	}
	for _, v := range live {
		v.deleted = true
		deleted = append(deleted, v.version)
	}
	return deleted, nil
}

// DELETE /subjects/{subject}/versions/{version}[?permanent=true]: soft
// delete one version, or hard delete one already soft deleted. Answers the
// version number.
func (r *Registry) deleteSubjectVersion(req *http.Request) (any, *apiError) {
	name := req.PathValue("subject")
	va, aerr := parseVersion(req.PathValue("version"))
	if aerr != nil {
		return nil, aerr
	}
	permanent := flag(req, "permanent")
	r.mu.Lock()
	defer r.mu.Unlock()
	// A hard delete names a soft-deleted version, so it looks among all.
	v, aerr := r.findVersionLocked(name, va, permanent)
	if aerr != nil {
		if !permanent && !va.latest {
			// Found among all versions, it was soft deleted already.
			if _, err := r.findVersionLocked(name, va, true); err == nil {
				return nil, newError(http.StatusNotFound, codeVersionSoftDeleted,
					"Subject '%s' Version %d was soft deleted.Set permanent=true to delete permanently", name, va.n)
			}
		}
		return nil, aerr
	}
	if permanent && !v.deleted {
		return nil, newError(http.StatusNotFound, codeVersionNotSoftDeleted,
			"Subject '%s' Version %d was not deleted first before being permanently deleted", name, v.version)
	}
	if !permanent && r.referencedLocked(name, v.version) {
		return nil, newError(http.StatusUnprocessableEntity, codeReferenceExists,
			"One or more references exist to the schema {subject=%s,version=%d}", name, v.version)
	}
	if permanent {
		s := r.mu.subjects[name]
		s.versions = slices.DeleteFunc(s.versions, func(x *version) bool { return x == v })
		r.dropSubjectIfEmptyLocked(name)
	} else {
		v.deleted = true
	}
	return v.version, nil
}
