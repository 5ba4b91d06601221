package srfake

import "net/http"

// compatibilityBody is the answer of a compatibility check; messages are
// sent only with verbose=true, as by the real registry.
type compatibilityBody struct {
	IsCompatible bool     `json:"is_compatible"`
	Messages     []string `json:"messages,omitempty"`
}

// POST /compatibility/subjects/{subject}/versions/{version}: whether a
// schema is compatible with one version of the subject (latest: its
// newest), in the direction(s) of the subject's level.
//
// POST /compatibility/subjects/{subject}/versions: the same against every
// version of the subject.
//
// A subject with no versions is compatible with anything when asked about
// latest or all versions; asked about a numbered version, it is not found.
func (r *Registry) checkCompatibility(req *http.Request) (any, *apiError) {
	name := req.PathValue("subject")
	all := req.PathValue("version") == ""
	var va versionArg
	if !all {
		var aerr *apiError
		if va, aerr = parseVersion(req.PathValue("version")); aerr != nil {
			return nil, aerr
		}
	}
	var body schemaRequest
	if aerr := decodeBody(req, &body); aerr != nil {
		return nil, aerr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, aerr := r.prepareLocked(&body)
	if aerr != nil {
		return nil, aerr
	}
	live := r.versionsLocked(name, false)
	if len(live) == 0 && (all || va.latest) {
		return compatibilityBody{IsCompatible: true}, nil
	}
	against := live
	if !all {
		v, aerr := r.findVersionLocked(name, va, false)
		if aerr != nil {
			return nil, aerr
		}
		against = []*version{v}
	}
	msgs, aerr := r.checkLocked(r.levelLocked(name), c, against, true)
	if aerr != nil {
		return nil, aerr
	}
	res := compatibilityBody{IsCompatible: len(msgs) == 0}
	if flag(req, "verbose") {
		res.Messages = append([]string{}, msgs...)
	}
	return res, nil
}
