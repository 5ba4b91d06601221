package srfake

import (
	"net/http"
	"strings"
)

// configBody is what GET /config answers; PUT answers with setConfigBody,
// as the real registry names the field differently in the two.
type configBody struct {
	CompatibilityLevel string `json:"compatibilityLevel"`
}

type setConfigBody struct {
	Compatibility string `json:"compatibility"`
}

// decodeLevel reads the level from a PUT /config body. It takes the field
// under either name, as some clients send compatibilityLevel.
func decodeLevel(req *http.Request) (string, *apiError) {
	var body struct {
		Compatibility      string `json:"compatibility"`
		CompatibilityLevel string `json:"compatibilityLevel"`
	}
	if aerr := decodeBody(req, &body); aerr != nil {
		return "", aerr
	}
	l := body.Compatibility
	if l == "" {
		l = body.CompatibilityLevel
	}
	l = strings.ToUpper(strings.TrimSpace(l))
	if !validLevel(l) {
		return "", errInvalidCompat()
	}
	return l, nil
}

// GET /config.
func (r *Registry) getGlobalConfig(*http.Request) (any, *apiError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return configBody{r.mu.compat}, nil
}

// PUT /config.
func (r *Registry) putGlobalConfig(req *http.Request) (any, *apiError) {
	l, aerr := decodeLevel(req)
	if aerr != nil {
		return nil, aerr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.compat = l
	return setConfigBody{l}, nil
}

// DELETE /config: back to the default, BACKWARD. Answers the level before.
func (r *Registry) deleteGlobalConfig(*http.Request) (any, *apiError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.mu.compat
	r.mu.compat = "BACKWARD"
	return configBody{old}, nil
}

// GET /config/{subject}[?defaultToGlobal=true]: the subject's own level;
// without one, 40408, or the global level with defaultToGlobal.
func (r *Registry) getSubjectConfig(req *http.Request) (any, *apiError) {
	name := req.PathValue("subject")
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.mu.subjects[name]; s != nil && s.compat != "" {
		return configBody{s.compat}, nil
	}
	if flag(req, "defaultToGlobal") {
		return configBody{r.mu.compat}, nil
	}
	return nil, newError(http.StatusNotFound, codeSubjectCompatNotConfigured,
		"Subject '%s' does not have subject-level compatibility configured", name)
}

// PUT /config/{subject}. The subject need not exist yet.
func (r *Registry) putSubjectConfig(req *http.Request) (any, *apiError) {
	name := req.PathValue("subject")
	l, aerr := decodeLevel(req)
	if aerr != nil {
		return nil, aerr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.mu.subjects[name]
	if s == nil {
		s = &subject{}
		r.mu.subjects[name] = s
	}
	s.compat = l
	return setConfigBody{l}, nil
}

// DELETE /config/{subject}: drop the subject's own level. Answers the level
// that applied before.
func (r *Registry) deleteSubjectConfig(req *http.Request) (any, *apiError) {
	name := req.PathValue("subject")
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.mu.subjects[name]
	if s == nil {
		return nil, errSubjectNotFound(name)
	}
	old := r.levelLocked(name)
	s.compat = ""
	r.dropSubjectIfEmptyLocked(name)
	return configBody{old}, nil
}
