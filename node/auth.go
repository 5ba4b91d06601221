package node

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/basindb/basin/pgwire"
)

// users is the node's pgwire.Authenticator: the method of Options.Auth
// and a verifier per user of Options.Users. pgwire runs the exchanges;
// this is only the store, fixed at start.
type users struct {
	method    pgwire.AuthMethod
	verifiers map[string]*pgwire.SCRAMVerifier
}

func (u *users) Method() pgwire.AuthMethod { return u.method }

// MethodFor implements pgwire.UserMethods: the cluster user logs in with
// SCRAM whatever the method for people is, since the nodes accept
// nothing else from each other (peerPoolConfig).
func (u *users) MethodFor(name string) pgwire.AuthMethod {
	if name == ClusterUser && u.method == pgwire.AuthPassword {
		return pgwire.AuthSCRAM
	}
	return u.method
}

func (u *users) Verifier(name string) (*pgwire.SCRAMVerifier, bool) {
	v, ok := u.verifiers[name]
	return v, ok
}

// newUsers builds the store from Options.Users. Each value is either a
// SCRAM-SHA-256 verifier as Postgres stores it (what `basin passwd`
// prints) or a password, which is turned into a verifier here with a
// fresh salt, so the node never keeps a password in memory past start.
// Errors name the user, never the secret.
func newUsers(method pgwire.AuthMethod, secrets map[string]string) (*users, error) {
	u := &users{method: method, verifiers: make(map[string]*pgwire.SCRAMVerifier, len(secrets))}
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		secret := secrets[name]
		if name == "" {
			return nil, errors.New("users: a user has an empty name")
		}
		var v *pgwire.SCRAMVerifier
		var err error
		switch {
		case secret == "":
			return nil, fmt.Errorf("users: user %q has an empty password", name)
		case strings.HasPrefix(secret, "SCRAM-SHA-256$"):
			v, err = pgwire.ParseSCRAMVerifier(secret)
		case isMD5Hash(secret):
			return nil, fmt.Errorf("users: user %q has an md5 password hash, which basin does not support: "+
				"give the password, or a SCRAM-SHA-256 verifier from `basin passwd`", name)
		default:
			v, err = pgwire.NewSCRAMVerifier(secret, 0)
		}
		if err != nil {
			return nil, fmt.Errorf("users: user %q: %w", name, err)
		}
		u.verifiers[name] = v
	}
	return u, nil
}

// isMD5Hash reports whether s looks like a Postgres md5 password hash
// ("md5" and 32 hex digits): taken as a password it would silently never
// match.
func isMD5Hash(s string) bool {
	h, ok := strings.CutPrefix(s, "md5")
	if !ok || len(h) != 32 {
		return false
	}
	return strings.Trim(h, "0123456789abcdef") == ""
}

// checkTrustAddr refuses trust authentication on a Postgres address that
// is not loopback: anyone who can reach it could connect as any user.
// Only literal loopback IPs and "localhost" count; a host name is not
// resolved, since what it resolves to can change after the check.
func checkTrustAddr(pgAddr string) error {
	host, _, err := net.SplitHostPort(pgAddr)
	if err != nil {
		return fmt.Errorf("pg-addr %q: %w", pgAddr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	where := fmt.Sprintf("--pg-addr %s is not a loopback address", pgAddr)
	if host == "" {
		where = fmt.Sprintf("--pg-addr %s listens on every interface", pgAddr)
	}
	return fmt.Errorf("%s, and --auth trust would let anyone who can reach it connect as any user without a password: "+
		"use --auth scram with users in the config file, listen on 127.0.0.1, "+
		"or pass --allow-trust-remote if every client that can reach this address is trusted", where)
}

// DefaultSCRAMIterations is the PBKDF2 iteration count of the verifiers
// NewVerifier makes by default, Postgres's default.
const DefaultSCRAMIterations = pgwire.DefaultSCRAMIterations

// NewVerifier returns the SCRAM-SHA-256 verifier of password, with a
// random salt and iterations rounds of PBKDF2 (0: the default), in the
// form Options.Users takes and Postgres stores. It is what `basin
// passwd` prints.
func NewVerifier(password string, iterations int) (string, error) {
	if password == "" {
		return "", errors.New("empty password")
	}
	v, err := pgwire.NewSCRAMVerifier(password, iterations)
	if err != nil {
		return "", err
	}
	return v.String(), nil
}
