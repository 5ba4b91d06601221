package srfake

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/hamba/avro/v2"
)

// Registry is an in-process schema registry listening on a loopback port.
// All its methods are safe for concurrent use.
type Registry struct {
	ln  net.Listener
	srv *http.Server
	wg  sync.WaitGroup // the Serve goroutine
	url string
	mux *http.ServeMux

	auth *basicAuth // nil: no authentication

	down     atomic.Bool
	requests atomic.Int64

	// compat is shared by every Avro compatibility check; it caches
	// results by the schemas' fingerprints and is safe for concurrent use.
	compat *avro.SchemaCompatibility

	mu struct {
		sync.Mutex
		// schemas holds every schema ever registered, by id; ids are
		// assigned densely from 1, so schemas[id-1] is id's record.
		schemas []*schemaRecord
		// byKey finds a schema's record by its identity (schemaRecord.key),
		// so that the same schema under any subject gets the same id.
		byKey map[string]*schemaRecord
		// subjects holds a subject from its first registration or
		// subject-level config until it is hard deleted with no config
		// left.
		subjects map[string]*subject
		// compat is the global compatibility level.
		compat string
	}
}

type basicAuth struct{ user, pass string }

// Option configures a Registry.
type Option func(*Registry)

// WithBasicAuth makes every request need HTTP basic authentication with
// user and pass; any other request is answered 401.
func WithBasicAuth(user, pass string) Option {
	return func(r *Registry) { r.auth = &basicAuth{user: user, pass: pass} }
}

// WithCompatibility sets the global compatibility level the registry starts
// with (default BACKWARD, as the real registry's). An invalid level makes
// New fail.
func WithCompatibility(level string) Option {
	return func(r *Registry) { r.mu.compat = level }
}

// errBadLevel is returned by New for an invalid WithCompatibility level.
var errBadLevel = errors.New("srfake: invalid compatibility level")

// New starts a registry on 127.0.0.1 on a port of the system's choosing.
// Close it when done.
func New(opts ...Option) (*Registry, error) {
	r := &Registry{compat: avro.NewSchemaCompatibility()}
	r.mu.byKey = make(map[string]*schemaRecord)
	r.mu.subjects = make(map[string]*subject)
	r.mu.compat = "BACKWARD"
	for _, o := range opts {
		o(r)
	}
	if !validLevel(r.mu.compat) {
		return nil, fmt.Errorf("%w %q: want one of %v", errBadLevel, r.mu.compat, levels)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.ln = ln
	r.mux = r.routes()
	r.url = "http://" + ln.Addr().String()
	r.srv = &http.Server{Handler: r}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		// Serve returns http.ErrServerClosed once Close is called; any
		// other error also ends the listener, and requests then fail,
		// which is what a test would see from a registry that died.
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// URL is the registry's base URL, as http://127.0.0.1:port with no trailing
// slash.
func (r *Registry) URL() string { return r.url }

// Close stops the listener, closes open connections and waits for the
// server goroutine to end. It is safe to call more than once.
func (r *Registry) Close() {
	_ = r.srv.Close()
	r.wg.Wait()
}

// SetDown makes the registry answer every request with 503 Service
// Unavailable while down is true, and serve normally again once it is set
// back to false. Its data is kept throughout. This is how a test makes the
// registry unavailable for a while to check that a client waits and
// retries.
func (r *Registry) SetDown(down bool) { r.down.Store(down) }

// Requests is how many HTTP requests the registry has received, including
// those refused by SetDown or authentication. A test can wait on it, for
// example until a client has retried against a registry that is down.
func (r *Registry) Requests() int64 { return r.requests.Load() }

// ServeHTTP applies what holds for every endpoint (availability,
// authentication, request content type) and routes the request.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	if r.down.Load() {
		writeError(w, newError(http.StatusServiceUnavailable, codeUnavailable,
			"srfake: the registry is down (SetDown(true))"))
		return
	}
	if r.auth != nil {
		user, pass, ok := req.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(r.auth.user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(pass), []byte(r.auth.pass)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="SchemaRegistry"`)
			writeError(w, newError(http.StatusUnauthorized, codeUnauthorized, "Unauthorized"))
			return
		}
	}
	if req.Body != nil && req.ContentLength != 0 {
		if ct := req.Header.Get("Content-Type"); ct != "" {
			mt, _, err := mime.ParseMediaType(ct)
			if err != nil || !acceptedRequestTypes[mt] {
				writeError(w, newError(http.StatusUnsupportedMediaType, codeUnsupportedMedia,
					"HTTP 415 Unsupported Media Type"))
				return
			}
		}
	}
	r.mux.ServeHTTP(w, req)
}

// acceptedRequestTypes are the request content types the real registry
// takes: its own versioned and unversioned types, plain JSON, and the
// generic type some HTTP clients send by default.
var acceptedRequestTypes = map[string]bool{
	"application/vnd.schemaregistry.v1+json": true,
	"application/vnd.schemaregistry+json":    true,
	"application/json":                       true,
	"application/octet-stream":               true,
}

// maxBody bounds a request body; real schemas are far smaller.
const maxBody = 16 << 20

// decodeBody decodes the JSON request body into v. Unknown fields are
// ignored, as the real registry ignores them.
func decodeBody(req *http.Request, v any) *apiError {
	dec := json.NewDecoder(io.LimitReader(req.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return newError(http.StatusBadRequest, codeMalformedRequest, "Request body is empty")
		}
		return newError(http.StatusBadRequest, codeMalformedRequest, "Unrecognized request body: %v", err)
	}
	return nil
}
