package pgwire

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"
	"github.com/xdg-go/stringprep"
)

// scramMechanism is the SASL mechanism offered on every connection.
// Over TLS scramPlusMechanism (channel binding, tls-server-end-point) is
// offered first: a client that binds (gs2 flag 'p', so pgx and libpq with
// channel_binding=require) proves it sees the server's own certificate,
// so a man in the middle holding another certificate cannot relay its
// login. Without TLS only scramMechanism is offered: a client asking for
// PLUS there is refused, and one that could bind but saw PLUS not
// offered says 'y', which is accepted.
const (
	scramMechanism     = "SCRAM-SHA-256"
	scramPlusMechanism = "SCRAM-SHA-256-PLUS"
)

// DefaultSCRAMIterations is the PBKDF2 iteration count of verifiers
// basin makes, Postgres's default scram_iterations.
const DefaultSCRAMIterations = 4096

// scramSaltLen is the salt length of verifiers basin makes, as Postgres's
// SCRAM_DEFAULT_SALT_LEN.
const scramSaltLen = 16

// ErrBadSCRAMVerifier is wrapped by ParseSCRAMVerifier's errors. They
// never quote the verifier: it is a secret, if a lesser one than the
// password.
var ErrBadSCRAMVerifier = errors.New("pgwire: malformed SCRAM-SHA-256 verifier")

// SCRAMVerifier is what the server keeps of a password: the salt and
// iteration count a client needs to derive its keys, StoredKey to check
// the client's proof and ServerKey to prove the server knows it too
// (RFC 5802 section 3). It cannot be used to log in, but it allows an
// offline guessing attack, so it is kept as carefully as a password.
type SCRAMVerifier struct {
	Iterations int
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

// ParseSCRAMVerifier parses a verifier in the form Postgres stores in
// pg_authid.rolpassword:
//
//	SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>
//
// with salt and keys in standard base64.
func ParseSCRAMVerifier(s string) (*SCRAMVerifier, error) {
	rest, ok := strings.CutPrefix(s, scramMechanism+"$")
	if !ok {
		return nil, fmt.Errorf("%w: it must begin with %q", ErrBadSCRAMVerifier, scramMechanism+"$")
	}
	params, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return nil, fmt.Errorf("%w: want SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>", ErrBadSCRAMVerifier)
	}
	iterText, saltText, ok1 := strings.Cut(params, ":")
	storedText, serverText, ok2 := strings.Cut(keys, ":")
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%w: want SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>", ErrBadSCRAMVerifier)
	}
	iters, err := strconv.Atoi(iterText)
	if err != nil || iters < 1 {
		return nil, fmt.Errorf("%w: the iteration count must be a positive integer", ErrBadSCRAMVerifier)
	}
	v := &SCRAMVerifier{Iterations: iters}
	for _, f := range []struct {
		name string
		text string
		dst  *[]byte
		size int
	}{
		{"salt", saltText, &v.Salt, 0},
		{"StoredKey", storedText, &v.StoredKey, sha256.Size},
		{"ServerKey", serverText, &v.ServerKey, sha256.Size},
	} {
		b, err := base64.StdEncoding.DecodeString(f.text)
		if err != nil || len(b) == 0 {
			return nil, fmt.Errorf("%w: the %s is not base64", ErrBadSCRAMVerifier, f.name)
		}
		if f.size != 0 && len(b) != f.size {
			return nil, fmt.Errorf("%w: the %s is %d bytes, want %d", ErrBadSCRAMVerifier, f.name, len(b), f.size)
		}
		*f.dst = b
	}
	return v, nil
}

// NewSCRAMVerifier makes a verifier for password with a random salt and
// iters PBKDF2 iterations (0 means DefaultSCRAMIterations), as Postgres's
// CREATE ROLE ... PASSWORD does.
func NewSCRAMVerifier(password string, iters int) (*SCRAMVerifier, error) {
	if iters == 0 {
		iters = DefaultSCRAMIterations
	}
	if iters < 1 {
		return nil, fmt.Errorf("pgwire: SCRAM iteration count %d: must be positive", iters)
	}
	salt := make([]byte, scramSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("pgwire: SCRAM salt: %w", err)
	}
	return deriveSCRAMVerifier(password, salt, iters)
}

// deriveSCRAMVerifier computes the verifier of password for a salt and
// iteration count (RFC 5802 section 3):
//
//	SaltedPassword := PBKDF2-HMAC-SHA-256(Normalize(password), salt, i)
//	StoredKey      := H(HMAC(SaltedPassword, "Client Key"))
//	ServerKey      := HMAC(SaltedPassword, "Server Key")
func deriveSCRAMVerifier(password string, salt []byte, iters int) (*SCRAMVerifier, error) {
	salted, err := pbkdf2.Key(sha256.New, normalizePassword(password), salt, iters, sha256.Size)
	if err != nil {
		return nil, fmt.Errorf("pgwire: SCRAM key derivation: %w", err)
	}
	clientKey := hmacSHA256(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	return &SCRAMVerifier{
		Iterations: iters,
		Salt:       salt,
		StoredKey:  storedKey[:],
		ServerKey:  hmacSHA256(salted, "Server Key"),
	}, nil
}

// normalizePassword applies SASLprep (RFC 4013) to a password, and keeps
// the password as it is when SASLprep refuses it (unassigned code
// points, bidirectional mixes), as Postgres and libpq do: a password
// Postgres accepts must give the same keys here.
func normalizePassword(password string) string {
	p, err := stringprep.SASLprep.Prepare(password)
	if err != nil {
		return password
	}
	return p
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// String formats v as Postgres stores it; ParseSCRAMVerifier reads it
// back.
func (v *SCRAMVerifier) String() string {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("%s$%d:%s$%s:%s", scramMechanism, v.Iterations, b64(v.Salt), b64(v.StoredKey), b64(v.ServerKey))
}

// matches reports whether password is the one v was made from. It costs
// v.Iterations rounds of PBKDF2 and compares in constant time.
func (v *SCRAMVerifier) matches(password string) bool {
	w, err := deriveSCRAMVerifier(password, v.Salt, v.Iterations)
	if err != nil {
		return false
	}
	// Both keys, so a verifier whose ServerKey was tampered with does not
	// accept the password either.
	return subtle.ConstantTimeCompare(w.StoredKey, v.StoredKey)&subtle.ConstantTimeCompare(w.ServerKey, v.ServerKey) == 1
}

// mockAuthKey is the secret mock salts are derived from, made once per
// process (Postgres keeps its mock_auth_nonce in pg_control).
var mockAuthKey = func() (k [32]byte) {
	_, _ = rand.Read(k[:])
	return k
}()

// mockVerifier stands in for the verifier of a user that does not exist,
// so that the exchange with such a user looks like one with a wrong
// password: same messages, a salt that is stable for the name (derived
// from a secret, as Postgres's scram_mock_salt), the default iteration
// count. Its keys are random, so no proof matches them.
func mockVerifier(user string) *SCRAMVerifier {
	m := hmac.New(sha256.New, mockAuthKey[:])
	m.Write([]byte(user))
	v := &SCRAMVerifier{
		Iterations: DefaultSCRAMIterations,
		Salt:       m.Sum(nil)[:scramSaltLen],
		StoredKey:  make([]byte, sha256.Size),
		ServerKey:  make([]byte, sha256.Size),
	}
	_, _ = rand.Read(v.StoredKey)
	_, _ = rand.Read(v.ServerKey)
	return v
}

// serverEndpointBinding is the tls-server-end-point channel binding
// (RFC 5929) of this connection: the hash of the certificate the server
// presented, which is the first of its TLS configuration (basin's has
// one). false without TLS, or when the certificate's hash cannot be
// told (then PLUS is not offered).
func (c *conn) serverEndpointBinding() (scram.ChannelBinding, bool) {
	if _, ok := c.nc.(*tls.Conn); !ok {
		return scram.ChannelBinding{}, false
	}
	cfg := c.srv.opts.TLSConfig
	if cfg == nil || len(cfg.Certificates) != 1 || len(cfg.Certificates[0].Certificate) == 0 {
		return scram.ChannelBinding{}, false
	}
	leaf := cfg.Certificates[0].Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cfg.Certificates[0].Certificate[0]); err != nil {
			return scram.ChannelBinding{}, false
		}
	}
	// The scram package hashes the first peer certificate of a client's
	// view of the connection; the server's view of it is its own.
	cb, err := scram.NewTLSServerEndpointBinding(&tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}})
	if err != nil {
		return scram.ChannelBinding{}, false
	}
	return cb, true
}

// authSCRAM runs a SCRAM-SHA-256 exchange (RFC 5802, RFC 7677) in
// Postgres's framing: AuthenticationSASL, SASLInitialResponse carrying
// client-first-message, AuthenticationSASLContinue with
// server-first-message, SASLResponse with client-final-message, and
// AuthenticationSASLFinal with server-final-message. The caller sends
// AuthenticationOk on success.
//
// The user is the startup message's: like Postgres, the server ignores
// the user name inside the SCRAM messages (clients send it empty). The
// verifier of an unknown user is a mockVerifier, so the exchange runs to
// the proof and fails there like a wrong password, revealing nothing
// about which names exist.
//
// Over TLS, SCRAM-SHA-256-PLUS with tls-server-end-point binding is
// offered too (serverEndpointBinding): the gs2 flag 'p' must then come
// with SCRAM-SHA-256-PLUS and the hash of this server's certificate;
// 'y' is refused as a downgrade (the client saw no PLUS though it was
// offered); 'n' (the client cannot bind) is accepted. Without TLS only
// 'n' and 'y' are. The client's proof is compared in constant time by
// the scram package.
func (c *conn) authSCRAM(user string) *pgerr.Error {
	v, known, e := c.verifier(user)
	if e != nil {
		return e
	}
	mechanisms := []string{scramMechanism}
	binding, canBind := c.serverEndpointBinding()
	if canBind {
		mechanisms = []string{scramPlusMechanism, scramMechanism}
	}
	if err := c.w.send(&pgproto3.AuthenticationSASL{AuthMechanisms: mechanisms}); err != nil {
		return errAuthAbandoned
	}
	if err := c.w.flush(); err != nil {
		return errAuthAbandoned
	}

	body, e := c.readAuthMessage("SASL")
	if e != nil {
		return e
	}
	var initial pgproto3.SASLInitialResponse
	if err := initial.Decode(body); err != nil {
		return c.authViolation("invalid SASLInitialResponse", err.Error())
	}
	plus := initial.AuthMechanism == scramPlusMechanism && canBind
	if initial.AuthMechanism != scramMechanism && !plus {
		// Postgres's message; it also covers SCRAM-SHA-256-PLUS where it
		// was not offered.
		return c.authViolation("client selected an invalid SASL authentication mechanism", "")
	}
	// The gs2 flag must agree with the mechanism, as in Postgres: 'p'
	// (binding) only with PLUS, and PLUS only with 'p'.
	if bound := len(initial.Data) > 0 && initial.Data[0] == 'p'; bound != plus {
		if plus {
			return c.authViolation("malformed SCRAM message", "SCRAM-SHA-256-PLUS was selected, but the message does not bind the channel")
		}
		return c.authViolation("malformed SCRAM message", "the message binds the channel, but SCRAM-SHA-256-PLUS was not selected")
	}

	creds := scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(v.Salt), Iters: v.Iterations},
		StoredKey:  v.StoredKey,
		ServerKey:  v.ServerKey,
	}
	srv, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) { return creds, nil })
	if err != nil {
		return c.internalError(fmt.Errorf("pgwire: SCRAM server: %w", err))
	}
	conv := srv.NewConversation()
	if canBind {
		conv = srv.NewConversationWithChannelBinding(binding)
	}

	// client-first-message holds the gs2 header, an (ignored) user name
	// and the client's nonce: nothing secret, so its parse error may be
	// shown and logged.
	serverFirst, err := conv.Step(string(initial.Data))
	if err != nil {
		return c.authViolation("malformed SCRAM message", err.Error())
	}
	if err := c.w.send(&pgproto3.AuthenticationSASLContinue{Data: []byte(serverFirst)}); err != nil {
		return errAuthAbandoned
	}
	if err := c.w.flush(); err != nil {
		return errAuthAbandoned
	}

	body, e = c.readAuthMessage("SASL")
	if e != nil {
		return e
	}
	var final pgproto3.SASLResponse
	if err := final.Decode(body); err != nil {
		return c.authViolation("invalid SASLResponse", "")
	}
	// client-final-message carries the proof. Errors about it are
	// reported by their RFC 5802 error value only ("e=invalid-proof"),
	// never with the text the scram package wraps, which may quote it.
	serverFinal, err := conv.Step(string(final.Data))
	switch {
	case err != nil && serverFinal == scram.ErrInvalidProof:
		reason := "wrong password"
		if !known {
			reason = "no such user"
		}
		return c.authFailed(user, "scram", reason)
	case err != nil:
		reason := strings.TrimPrefix(serverFinal, "e=")
		if reason == "" {
			reason = "unparsable client-final-message"
		}
		return c.authViolation("malformed SCRAM message", reason)
	case !conv.Valid() || !known:
		// Unreachable: a mock verifier's random keys match no proof.
		return c.authFailed(user, "scram", "no such user")
	}
	if err := c.w.send(&pgproto3.AuthenticationSASLFinal{Data: []byte(serverFinal)}); err != nil {
		return errAuthAbandoned
	}
	return nil
}

// Matches reports whether password is the one v was made from: for a
// login that sends the password itself (the status page's).
func (v *SCRAMVerifier) Matches(password string) bool { return v.matches(password) }
