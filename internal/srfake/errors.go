package srfake

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// The registry's error codes: the HTTP status followed by two digits for
// the registry's own errors, the status alone for those of the HTTP layer
// (authentication, media type, unknown path) and older conflicts. Clients (franz-go's sr.Error, Confluent's RestClientException) branch on
// these rather than on the message, so they must match the real registry's.
const (
	codeSubjectNotFound            = 40401
	codeVersionNotFound            = 40402
	codeSchemaNotFound             = 40403
	codeSubjectSoftDeleted         = 40404
	codeSubjectNotSoftDeleted      = 40405
	codeVersionSoftDeleted         = 40406
	codeVersionNotSoftDeleted      = 40407
	codeSubjectCompatNotConfigured = 40408
	// codeIncompatible is what older releases of the real registry send
	// with the 409 of an incompatible registration; recent ones send 40901.
	// Clients go by the HTTP status, so either works for them.
	codeIncompatible     = 409
	codeInvalidSchema    = 42201
	codeInvalidVersion   = 42202
	codeInvalidCompat    = 42203
	codeReferenceExists  = 42206
	codeStore            = 50001
	codeUnavailable      = 503
	codeUnauthorized     = 401
	codeUnsupportedMedia = 415
	codeMalformedRequest = 400
	codeNotFound         = 404
)

// apiError is an error as the registry sends it: an HTTP status and a body
// of {"error_code": N, "message": "..."}.
type apiError struct {
	status int
	code   int
	msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("srfake: %d %d: %s", e.status, e.code, e.msg) }

func newError(status, code int, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

// The messages follow the real registry's, word for word where clients or
// people are likely to match on them.

func errSubjectNotFound(subject string) *apiError {
	return newError(http.StatusNotFound, codeSubjectNotFound, "Subject '%s' not found.", subject)
}

func errVersionNotFound(version int) *apiError {
	return newError(http.StatusNotFound, codeVersionNotFound, "Version %d not found.", version)
}

func errSchemaNotFound() *apiError {
	return newError(http.StatusNotFound, codeSchemaNotFound, "Schema not found")
}

func errSchemaIDNotFound(id string) *apiError {
	return newError(http.StatusNotFound, codeSchemaNotFound, "Schema %s not found", id)
}

func errInvalidSchema(format string, args ...any) *apiError {
	return newError(http.StatusUnprocessableEntity, codeInvalidSchema, format, args...)
}

func errInvalidVersion(version string) *apiError {
	return newError(http.StatusUnprocessableEntity, codeInvalidVersion,
		"The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", version)
}

func errInvalidCompat() *apiError {
	return newError(http.StatusUnprocessableEntity, codeInvalidCompat,
		"Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive")
}

// errorBody is the JSON body of every error response.
type errorBody struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

const contentType = "application/vnd.schemaregistry.v1+json"

// writeJSON writes v as the response body with the registry's content type.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Every value written here is built by this package from strings,
		// ints and slices of them; a failure is a bug.
		panic(fmt.Sprintf("srfake: encoding a response: %v", err))
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, errorBody{ErrorCode: e.code, Message: e.msg})
}
