package pgwire

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults for Options; see each field.
const (
	DefaultAddr           = "127.0.0.1:5433"
	DefaultMaxConnections = 100
	DefaultMaxMessageSize = 64 << 20
	DefaultStartupTimeout = 10 * time.Second

	DefaultMaxStartupConnections        = 256
	DefaultMaxStartupConnectionsPerHost = 64
)

// Options configures a Server. The zero value of every field means its
// default; NewServer fills defaults in and validates, in that order, in
// one place (Options.withDefaults and Options.Validate).
type Options struct {
	// Addr is the TCP address Start listens on. Default DefaultAddr
	// ("127.0.0.1:5433"); tests use "127.0.0.1:0".
	Addr string

	// MaxConnections is the number of sessions (connections past the
	// startup message) that may be open at once. The next one is refused
	// with 53300 "sorry, too many clients already". CancelRequest
	// connections never count. Default DefaultMaxConnections (100).
	MaxConnections int

	// Logger receives connection lifecycle events (debug), protocol
	// violations (warn) and internal errors with their stacks (error).
	// Default slog.Default().
	Logger *slog.Logger

	// TLSConfig, when set, makes the server answer SSLRequest with 'S'
	// and upgrade the connection with tls.Server. Nil (the default)
	// answers 'N' and the client continues in plaintext.
	TLSConfig *tls.Config
	// RequireTLS refuses (FATAL 28000, before any authentication) a
	// connection that did not negotiate TLS. It needs TLSConfig.
	RequireTLS bool

	// Authenticator gives the authentication method and the users'
	// verifiers (auth.go). Nil (the default) is trust: any user name is
	// accepted without a password. AuthPassword needs TLSConfig, since
	// cleartext passwords are accepted only over TLS.
	Authenticator Authenticator

	// MaxMessageSize bounds the body of one frontend message in bytes; a
	// larger length closes the connection with 08P01 before the body is
	// read. Default DefaultMaxMessageSize (64 MiB).
	MaxMessageSize int

	// StartupTimeout bounds the time from accept to the end of startup
	// (SSL negotiation, the startup message, Backend.Open), like
	// Postgres's authentication_timeout. Default DefaultStartupTimeout
	// (10s): a client that has not started its session by then is
	// closed, so connections that send nothing hold their descriptor
	// for at most that long.
	StartupTimeout time.Duration

	// MaxStartupConnections bounds the connections that are accepted but
	// have not finished startup, in total; MaxStartupConnectionsPerHost
	// bounds them per remote IP address. A connection over either is
	// closed as soon as it is accepted, unanswered, before it holds a
	// goroutine or reads a byte. They keep connections that never send a
	// startup packet from using up the process's file descriptors, which
	// the broker, the views' stores and the HTTP server need too: with
	// StartupTimeout they bound what such a flood holds. Sessions are
	// bounded by MaxConnections. Defaults
	// DefaultMaxStartupConnections (256), or a quarter of the process's
	// descriptor limit (RLIMIT_NOFILE) when that is less, and
	// DefaultMaxStartupConnectionsPerHost (64), or the total when that
	// is less.
	MaxStartupConnections        int
	MaxStartupConnectionsPerHost int
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	if o.StartupTimeout == 0 {
		o.StartupTimeout = DefaultStartupTimeout
	}
	if o.MaxStartupConnections == 0 {
		o.MaxStartupConnections = DefaultMaxStartupConnections
		if limit := fileLimit(); limit > 0 {
			o.MaxStartupConnections = max(1, min(o.MaxStartupConnections, limit/4))
		}
	}
	if o.MaxStartupConnectionsPerHost == 0 {
		o.MaxStartupConnectionsPerHost = min(DefaultMaxStartupConnectionsPerHost, o.MaxStartupConnections)
	}
	return o
}

// Validate reports the first invalid setting. Zero values are valid: they
// mean the default.
func (o Options) Validate() error {
	if o.MaxConnections < 0 {
		return fmt.Errorf("pgwire: MaxConnections is %d: must be positive, or 0 for the default %d",
			o.MaxConnections, DefaultMaxConnections)
	}
	if o.MaxMessageSize < 0 {
		return fmt.Errorf("pgwire: MaxMessageSize is %d: must be positive, or 0 for the default %d",
			o.MaxMessageSize, DefaultMaxMessageSize)
	}
	if o.MaxMessageSize > 0 && o.MaxMessageSize < minMaxMessageSize {
		return fmt.Errorf("pgwire: MaxMessageSize is %d: must be at least %d bytes",
			o.MaxMessageSize, minMaxMessageSize)
	}
	if o.RequireTLS && o.TLSConfig == nil {
		return errors.New("pgwire: RequireTLS needs TLSConfig: without it every connection would be refused")
	}
	if o.Authenticator != nil {
		switch m := o.Authenticator.Method(); m {
		case AuthTrust, AuthSCRAM:
		case AuthPassword:
			if o.TLSConfig == nil {
				return errors.New("pgwire: the password method needs TLSConfig: cleartext passwords are " +
					"accepted only over TLS, so without it every connection would be refused")
			}
		default:
			return fmt.Errorf("pgwire: unknown authentication method %v", m)
		}
	}
	if o.StartupTimeout < 0 {
		return fmt.Errorf("pgwire: StartupTimeout is %v: must be positive, or 0 for the default %v",
			o.StartupTimeout, DefaultStartupTimeout)
	}
	if o.MaxStartupConnections < 0 {
		return fmt.Errorf("pgwire: MaxStartupConnections is %d: must be positive, or 0 for the default %d",
			o.MaxStartupConnections, DefaultMaxStartupConnections)
	}
	if o.MaxStartupConnectionsPerHost < 0 {
		return fmt.Errorf("pgwire: MaxStartupConnectionsPerHost is %d: must be positive, or 0 for the default %d",
			o.MaxStartupConnectionsPerHost, DefaultMaxStartupConnectionsPerHost)
	}
	return nil
}

// minMaxMessageSize keeps MaxMessageSize above what ordinary short
// statements need, so a typo cannot make the server unusable.
const minMaxMessageSize = 1024
