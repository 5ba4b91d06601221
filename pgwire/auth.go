package pgwire

import (
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/jackc/pgx/v5/pgproto3"
)

// AuthMethod is how a connection proves who its user is.
type AuthMethod int

const (
	// AuthTrust accepts any user name without a password, as Postgres's
	// trust method. It is the default, and node/ allows it only on a
	// loopback address.
	AuthTrust AuthMethod = iota
	// AuthSCRAM asks for SCRAM-SHA-256: the password never crosses the
	// wire and the server proves it knows the verifier too.
	AuthSCRAM
	// AuthPassword asks for the password in cleartext (Postgres's
	// password method). It is allowed only over TLS: on a plaintext
	// connection it is refused with 28000 before the client sends it.
	AuthPassword
)

// String returns the method's name in --auth: trust, scram or password.
func (m AuthMethod) String() string {
	switch m {
	case AuthTrust:
		return "trust"
	case AuthSCRAM:
		return "scram"
	case AuthPassword:
		return "password"
	}
	return fmt.Sprintf("AuthMethod(%d)", int(m))
}

// ParseAuthMethod parses trust, scram (also scram-sha-256, as pg_hba.conf
// spells it) or password.
func ParseAuthMethod(s string) (AuthMethod, error) {
	switch s {
	case "trust":
		return AuthTrust, nil
	case "scram", "scram-sha-256":
		return AuthSCRAM, nil
	case "password":
		return AuthPassword, nil
	}
	return 0, fmt.Errorf("unknown authentication method %q: use trust, scram or password", s)
}

// Authenticator is what the server needs to authenticate connections:
// the method, and each user's verifier. node/ supplies it from its
// configuration; pgwire owns the exchanges on the wire, so the user
// store never sees a protocol message and the protocol code never sees
// the configuration.
type Authenticator interface {
	// Method is how every connection authenticates.
	Method() AuthMethod
	// Verifier returns user's SCRAM-SHA-256 verifier, or false when there
	// is no such user. It is called from many connections at once. The
	// cleartext method checks passwords against the verifier too, so the
	// store never needs to hold a password.
	Verifier(user string) (*SCRAMVerifier, bool)
}

// maxAuthMessageLen bounds an authentication response, as Postgres's
// PG_MAX_AUTH_TOKEN_LENGTH: it is read before the client is known.
const maxAuthMessageLen = 65535

// errAuthAbandoned is returned by the authentication steps when the
// client went away or the socket failed: the connection closes without
// an answer. It is never sent.
var errAuthAbandoned = &pgerr.Error{Code: pgerr.ConnectionFailure, Message: "client went away during authentication"}

// UserMethods is implemented by an Authenticator some of whose users
// log in by another method than Method's: node's cluster user, whose
// secret only ever travels inside SCRAM even where people's passwords
// are sent in cleartext over TLS (AuthPassword).
type UserMethods interface {
	MethodFor(user string) AuthMethod
}

// authenticate runs the configured method for user and sends
// AuthenticationOk, or a FATAL error and reports false. It runs inside
// the startup deadline, so a client that stops answering (psql, for
// one, hangs up to prompt for the password and then reconnects) costs
// at most StartupTimeout.
func (c *conn) authenticate(user string) bool {
	if _, ok := c.nc.(*tls.Conn); !ok && c.srv.opts.RequireTLS {
		c.log.Info("pgwire: connection without TLS refused (RequireTLS)", "user", user)
		c.fatal(&pgerr.Error{
			Code:    pgerr.InvalidAuthorizationSpecification,
			Message: "this server accepts only TLS connections",
			Hint:    "Connect with sslmode=require (or verify-full).",
		})
		return false
	}
	method := AuthTrust
	if a := c.srv.opts.Authenticator; a != nil {
		method = a.Method()
		if um, ok := a.(UserMethods); ok {
			method = um.MethodFor(user)
		}
	}
	var e *pgerr.Error
	switch method {
	case AuthTrust:
	case AuthSCRAM:
		e = c.authSCRAM(user)
	case AuthPassword:
		e = c.authCleartext(user)
	default:
		e = c.internalError(fmt.Errorf("pgwire: unknown authentication method %v", method))
	}
	if e == errAuthAbandoned {
		return false
	}
	if e != nil {
		c.fatal(e)
		return false
	}
	if err := c.w.send(&pgproto3.AuthenticationOk{}); err != nil {
		return false
	}
	c.log.Debug("pgwire: authenticated", "user", user, "method", method.String())
	return true
}

// authCleartext asks for the password in cleartext and checks it against
// the user's verifier. On a connection without TLS it refuses before the
// client sends anything, so the password never crosses the network in
// the clear.
func (c *conn) authCleartext(user string) *pgerr.Error {
	if _, ok := c.nc.(*tls.Conn); !ok {
		c.log.Info("pgwire: cleartext password refused on a connection without TLS", "user", user)
		return &pgerr.Error{
			Code:    pgerr.InvalidAuthorizationSpecification,
			Message: "cleartext password authentication requires a TLS connection",
			Hint:    "Connect with sslmode=require, or ask the administrator for --auth scram, which never sends the password.",
		}
	}
	v, known, e := c.verifier(user)
	if e != nil {
		return e
	}
	if err := c.w.send(&pgproto3.AuthenticationCleartextPassword{}); err != nil {
		return errAuthAbandoned
	}
	if err := c.w.flush(); err != nil {
		return errAuthAbandoned
	}
	body, e := c.readAuthMessage("password")
	if e != nil {
		return e
	}
	var pm pgproto3.PasswordMessage
	if err := pm.Decode(body); err != nil {
		return c.authViolation("invalid password packet", "")
	}
	// The PBKDF2 runs for unknown users too (against the mock
	// verifier), so the time taken does not tell which names exist.
	ok := v.matches(pm.Password)
	switch {
	case pm.Password == "":
		return c.authFailed(user, "password", "empty password")
	case !known:
		return c.authFailed(user, "password", "no such user")
	case !ok:
		return c.authFailed(user, "password", "wrong password")
	}
	return nil
}

// verifier looks user up, returning a mock verifier and false for an
// unknown user. A panic in the Authenticator is an internal error.
func (c *conn) verifier(user string) (v *SCRAMVerifier, known bool, e *pgerr.Error) {
	err := callSafely(func() error {
		v, known = c.srv.opts.Authenticator.Verifier(user)
		return nil
	})
	if err != nil {
		return nil, false, c.internalError(err)
	}
	if !known || v == nil {
		return mockVerifier(user), false, nil
	}
	return v, true, nil
}

// readAuthMessage reads one authentication response ('p': password,
// SASLInitialResponse or SASLResponse; which one is known only from the
// state, as in Postgres) and returns its body. Like startup packets it is
// read with exact-length reads from the socket, so nothing the client
// sent after it is consumed here. kind names the expected response in
// the error.
func (c *conn) readAuthMessage(kind string) ([]byte, *pgerr.Error) {
	var hdr [5]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		c.log.Debug("pgwire: connection closed during authentication", "err", err)
		return nil, errAuthAbandoned
	}
	if hdr[0] == 'X' {
		// Terminate: the client has no password to give.
		c.log.Debug("pgwire: client terminated during authentication")
		return nil, errAuthAbandoned
	}
	if hdr[0] != 'p' {
		return nil, c.authViolation(fmt.Sprintf("expected %s response, got message type %q", kind, hdr[0]), "")
	}
	n := int64(int32(binary.BigEndian.Uint32(hdr[1:])))
	if n < 4 || n-4 > maxAuthMessageLen {
		return nil, c.authViolation(fmt.Sprintf("invalid %s response length %d", kind, n), "")
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(c.nc, body); err != nil {
		c.log.Debug("pgwire: connection closed during authentication", "err", err)
		return nil, errAuthAbandoned
	}
	return body, nil
}

// authViolation logs a malformed authentication exchange and returns the
// FATAL 08P01 for it. msg and detail must not hold secrets: they are
// logged.
func (c *conn) authViolation(msg, detail string) *pgerr.Error {
	c.log.Warn("pgwire: protocol violation in authentication; closing connection", "err", msg, "detail", detail)
	return &pgerr.Error{Code: pgerr.ProtocolViolation, Message: msg, Detail: detail}
}

// authFailed logs a failed authentication with the user and the reason,
// never the password or proof, and returns the FATAL 28P01 the client
// sees. The message is the same for a wrong password and an unknown
// user, as Postgres's; only the log tells them apart.
func (c *conn) authFailed(user, method, reason string) *pgerr.Error {
	c.log.Warn("pgwire: password authentication failed", "user", user, "method", method, "reason", reason)
	return &pgerr.Error{
		Code:    pgerr.InvalidPassword,
		Message: `password authentication failed for user "` + user + `"`,
	}
}
