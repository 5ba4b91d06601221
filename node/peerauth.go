package node

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Inter-node HTTP requests (POST /heartbeat, POST /lag, GET /tasks, GET
// /clusterStatus) steer what a node believes of its peers: which are
// alive, how fresh their replicas are. When the cluster has a secret
// (Options.ClusterSecret), every such request carries an HMAC-SHA256,
// keyed by a key derived from the secret, over the method, the path and
// query, the receiving node's id, a timestamp, a nonce and the body's
// SHA-256. The receiver refuses (401) a request without a valid
// signature, one whose timestamp is more than peerAuthWindow from its
// own clock, one signed for another node, and a nonce it has already
// seen within the window: a captured request cannot be replayed, to this
// node or to another. Without a secret the endpoints take any request,
// which is why trust mode is for a trusted network only (see
// docs/operations.md, "Security").

// Headers of a signed request.
const (
	hdrPeerTimestamp = "Basin-Timestamp" // unix milliseconds
	hdrPeerNonce     = "Basin-Nonce"     // 32 hex digits
	hdrPeerSignature = "Basin-Signature" // hex HMAC-SHA256
)

const (
	// peerAuthWindow is how far a request's timestamp may be from the
	// receiver's clock; the nodes' clocks must agree within it.
	peerAuthWindow = 30 * time.Second
	// maxPeerNonces bounds the replay cache. A cluster sends about
	// (1/heartbeat interval + 1/lag interval) × peers requests a second
	// to a node, a few thousand in a window; a receiver whose cache is
	// full of unexpired nonces refuses new requests until they expire
	// (503), which takes a key holder flooding it.
	maxPeerNonces = 1 << 16
	// peerBodyLimit bounds the body of a request to a cluster endpoint
	// (413 beyond it). A lag report of a node with a few thousand tasks
	// fits.
	peerBodyLimit = 1 << 20
)

// errPeerAuth is the category of a refused signature.
var errPeerAuth = errors.New("node: inter-node request not authenticated")

// errReplayCacheFull is returned while the replay cache holds
// maxPeerNonces unexpired nonces.
var errReplayCacheFull = errors.New("node: too many inter-node requests in the replay window; retry later")

// peerAuth signs the requests this node sends to its peers and verifies
// the ones it receives. A nil *peerAuth (no cluster secret) signs
// nothing and accepts everything.
type peerAuth struct {
	key []byte

	mu struct {
		sync.Mutex
		// seen maps each nonce accepted within the window to its
		// request's timestamp.
		seen map[string]time.Time
		// pruned is when seen was last rid of expired nonces.
		pruned time.Time
	}
}

// newPeerAuth returns the signer and verifier for secret, nil without one.
func newPeerAuth(secret string) *peerAuth {
	if secret == "" {
		return nil
	}
	// The key is derived, not the secret itself: the secret is also a
	// SCRAM password (of basin_cluster), and a key used for one purpose
	// only cannot be played against another.
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("basin inter-node http v1"))
	a := &peerAuth{key: m.Sum(nil)}
	a.mu.seen = map[string]time.Time{}
	return a
}

// mac is the signature of a request to node to.
func (a *peerAuth) mac(method, uri, to, ts, nonce string, body []byte) []byte {
	sum := sha256.Sum256(body)
	m := hmac.New(sha256.New, a.key)
	for _, s := range []string{method, uri, to, ts, nonce, hex.EncodeToString(sum[:])} {
		m.Write([]byte(s))
		m.Write([]byte{'\n'})
	}
	return m.Sum(nil)
}

// sign adds the signature headers to req, a request with body to the
// node whose id is to. Without a secret it does nothing.
func (a *peerAuth) sign(req *http.Request, to string, body []byte, now time.Time) {
	if a == nil {
		return
	}
	var nb [16]byte
	_, _ = rand.Read(nb[:])
	ts, nonce := strconv.FormatInt(now.UnixMilli(), 10), hex.EncodeToString(nb[:])
	req.Header.Set(hdrPeerTimestamp, ts)
	req.Header.Set(hdrPeerNonce, nonce)
	req.Header.Set(hdrPeerSignature, hex.EncodeToString(a.mac(req.Method, req.URL.RequestURI(), to, ts, nonce, body)))
}

// verify checks the signature of r, received by node self with body, at
// now, and records its nonce. Without a secret it accepts everything.
func (a *peerAuth) verify(r *http.Request, self string, body []byte, now time.Time) error {
	if a == nil {
		return nil
	}
	ts, nonce, sig := r.Header.Get(hdrPeerTimestamp), r.Header.Get(hdrPeerNonce), r.Header.Get(hdrPeerSignature)
	if ts == "" || nonce == "" || sig == "" {
		return fmt.Errorf("%w: no signature (%s, %s, %s headers); this cluster has a secret, and only its nodes may call this endpoint",
			errPeerAuth, hdrPeerTimestamp, hdrPeerNonce, hdrPeerSignature)
	}
	if nb, err := hex.DecodeString(nonce); err != nil || len(nb) != 16 {
		return fmt.Errorf("%w: %s is not 32 hex digits", errPeerAuth, hdrPeerNonce)
	}
	got, err := hex.DecodeString(sig)
	if err != nil || !hmac.Equal(got, a.mac(r.Method, r.URL.RequestURI(), self, ts, nonce, body)) {
		return fmt.Errorf("%w: bad signature (is the sender's cluster-secret the same as this node's?)", errPeerAuth)
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s is not unix milliseconds", errPeerAuth, hdrPeerTimestamp)
	}
	at := time.UnixMilli(ms)
	if d := now.Sub(at); d > peerAuthWindow || d < -peerAuthWindow {
		return fmt.Errorf("%w: timestamp %s is %s from this node's clock, more than %s (stale, or the clocks disagree)",
			errPeerAuth, at.UTC().Format(time.RFC3339Nano), d.Round(time.Millisecond), peerAuthWindow)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.mu.seen[nonce]; ok {
		return fmt.Errorf("%w: nonce %s already used (a replayed request)", errPeerAuth, nonce)
	}
	if len(a.mu.seen) >= maxPeerNonces || now.Sub(a.mu.pruned) > peerAuthWindow {
		a.pruneLocked(now)
		if len(a.mu.seen) >= maxPeerNonces {
			return errReplayCacheFull
		}
	}
	a.mu.seen[nonce] = at
	return nil
}

// pruneLocked forgets the nonces whose timestamps have left the window:
// a replay of one is refused for its timestamp. a.mu must be held.
func (a *peerAuth) pruneLocked(now time.Time) {
	for n, at := range a.mu.seen {
		if d := now.Sub(at); d > peerAuthWindow || d < -peerAuthWindow {
			delete(a.mu.seen, n)
		}
	}
	a.mu.pruned = now
}

// nonces is the size of the replay cache, for tests.
func (a *peerAuth) nonces() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.mu.seen)
}

// peerEndpoint wraps a cluster endpoint: the body is read up to
// peerBodyLimit (413 beyond), the signature verified when the cluster
// has a secret (401, or 503 while the replay cache is full), and h gets
// the request with its body still to read.
func (n *Node) peerEndpoint(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, peerBodyLimit))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, fmt.Sprintf("%s %s: the body is over %d bytes", r.Method, r.URL.Path, mbe.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, fmt.Sprintf("%s %s: reading the body: %v", r.Method, r.URL.Path, err), http.StatusBadRequest)
			return
		}
		if err := n.peerAuth.verify(r, n.id, body, time.Now()); err != nil {
			n.metrics.peerRefused.Inc()
			n.log.Debug("refused an inter-node request", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			code := http.StatusUnauthorized
			if errors.Is(err, errReplayCacheFull) {
				code = http.StatusServiceUnavailable
			}
			http.Error(w, err.Error(), code)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}
}
