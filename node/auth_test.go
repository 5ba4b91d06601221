package node

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/basindb/basin/pgwire"
)

func TestCheckTrustAddr(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:5433", "127.0.0.2:0", "[::1]:5433", "localhost:5433"} {
		if err := checkTrustAddr(addr); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:5433", ":5433", "[::]:5433", "10.0.0.5:5433", "db.example.com:5433", "nonsense"} {
		err := checkTrustAddr(addr)
		if err == nil {
			t.Errorf("%s: trust allowed", addr)
			continue
		}
		if addr != "nonsense" && (!strings.Contains(err.Error(), "--auth scram") || !strings.Contains(err.Error(), "--allow-trust-remote")) {
			t.Errorf("%s: the error does not say what to do: %v", addr, err)
		}
	}
}

func TestValidateAuth(t *testing.T) {
	users := map[string]string{"alice": "pw"}
	for _, tc := range []struct {
		name string
		opts Options
		want string // "" for valid
	}{
		{"default", Options{}, ""},
		{"trust remote", Options{PGAddr: "0.0.0.0:5433"}, "--allow-trust-remote"},
		{"trust remote allowed", Options{PGAddr: "0.0.0.0:5433", AllowTrustRemote: true}, ""},
		{"scram remote", Options{PGAddr: "0.0.0.0:5433", Auth: "scram", Users: users}, ""},
		{"scram without users", Options{Auth: "scram"}, "needs users"},
		{"unknown method", Options{Auth: "md5"}, "use trust, scram or password"},
		{"password without TLS", Options{Auth: "password", Users: users}, "only over TLS"},
		{"password with TLS", Options{Auth: "password", Users: users, TLSCert: "c", TLSKey: "k"}, ""},
		{"password without users", Options{Auth: "password", TLSCert: "c", TLSKey: "k"}, "needs users"},
		{"cert without key", Options{TLSCert: "c"}, "go together"},
		{"key without cert", Options{TLSKey: "k"}, "go together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.ensureDefaults()
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestNewUsers(t *testing.T) {
	verifier, err := NewVerifier("from passwd", 0)
	if err != nil {
		t.Fatal(err)
	}
	u, err := newUsers(pgwire.AuthSCRAM, map[string]string{"Alice": "plain pw", "bob": verifier})
	if err != nil {
		t.Fatal(err)
	}
	if u.Method() != pgwire.AuthSCRAM {
		t.Errorf("method %v", u.Method())
	}
	if v, ok := u.Verifier("bob"); !ok || v.String() != verifier {
		t.Errorf("bob: %v %v", v, ok)
	}
	if v, ok := u.Verifier("Alice"); !ok || !strings.HasPrefix(v.String(), "SCRAM-SHA-256$4096:") {
		t.Errorf("Alice: %v %v", v, ok)
	}
	if _, ok := u.Verifier("alice"); ok {
		t.Error("user names must be case-sensitive")
	}

	for _, tc := range []struct {
		secret, want string
	}{
		{"", "empty password"},
		{"md5" + strings.Repeat("0a", 16), "md5"},
		{"SCRAM-SHA-256$4096:bad$secretbits", "malformed SCRAM-SHA-256 verifier"},
	} {
		_, err := newUsers(pgwire.AuthSCRAM, map[string]string{"carol": tc.secret})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"carol"`) {
			t.Errorf("%q: got %v, want an error naming carol and containing %q", tc.secret, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secretbits") {
			t.Errorf("the error quotes the secret: %v", err)
		}
	}
	if _, err := NewVerifier("", 0); err == nil {
		t.Error("empty password accepted")
	}
}

// writeCert writes a fresh self-signed certificate for 127.0.0.1 and its
// key as PEM files and returns their paths.
func writeCert(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "basin test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestLoadTLS(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	cert, key := writeCert(t, dir, "a")
	_, otherKey := writeCert(t, dir, "b")
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}

	cfg, err := loadTLS(cert, key, log)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS12 || len(cfg.Certificates) != 1 {
		t.Errorf("config: min version %x, %d certificates", cfg.MinVersion, len(cfg.Certificates))
	}
	if cfg, err := loadTLS("", "", log); cfg != nil || err != nil {
		t.Errorf("no files: %v %v", cfg, err)
	}
	for _, tc := range []struct {
		cert, key string
		want      []string
	}{
		{filepath.Join(dir, "missing.crt"), key, []string{"--tls-cert", "missing.crt", "no such file"}},
		{cert, filepath.Join(dir, "missing.key"), []string{"--tls-key", "missing.key"}},
		{cert, otherKey, []string{cert, otherKey, "does not match"}},
		{garbage, key, []string{garbage, "certificate"}},
		{cert, garbage, []string{garbage, "key"}},
	} {
		_, err := loadTLS(tc.cert, tc.key, log)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s + %s: got %v, want it to contain %q", tc.cert, tc.key, err, w)
			}
		}
	}
}

// syncBuffer is a bytes.Buffer for a log handler written by many
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNodeSCRAMOverTLS starts a node as `basin serve --auth scram
// --tls-cert --tls-key` with users from both forms and logs in over TLS
// with pgx. The whole node's debug log holds no password.
func TestNodeSCRAMOverTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir, "server")
	verifier, err := NewVerifier("bob's password", 0)
	if err != nil {
		t.Fatal(err)
	}
	var logBuf syncBuffer
	n := startNode(t, filepath.Join(dir, "data"), func(o *Options) {
		o.TLSCert, o.TLSKey = cert, key
		o.Auth = "scram"
		o.Users = map[string]string{"Alice": "alice's password", "bob": verifier}
		o.Logger = slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	login := func(user, password string) (*pgx.Conn, error) {
		return connectAs(t, n.PGAddr(), user, password)
	}
	for _, u := range [][2]string{{"Alice", "alice's password"}, {"bob", "bob's password"}} {
		conn, err := login(u[0], u[1])
		if err != nil {
			t.Fatalf("%s: %v", u[0], err)
		}
		if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
			t.Errorf("%s: connection is %T, want TLS", u[0], conn.PgConn().Conn())
		}
		var who string
		if err := conn.QueryRow(context.Background(), "SELECT 'ok'").Scan(&who); err != nil || who != "ok" {
			t.Errorf("%s: query: %q %v", u[0], who, err)
		}
		conn.Close(context.Background())
	}
	for _, u := range [][2]string{{"Alice", "not alice's secret"}, {"alice", "alice's password"}, {"nobody", "bob's password"}} {
		_, err := login(u[0], u[1])
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28P01" || pe.Message != `password authentication failed for user "`+u[0]+`"` {
			t.Errorf("%s/%s: got %v, want 28P01", u[0], u[1], err)
		}
	}
	logs := logBuf.String()
	if !strings.Contains(logs, "password authentication failed") || !strings.Contains(logs, "user=nobody") {
		t.Errorf("failed logins are not logged:\n%s", logs)
	}
	for _, secret := range []string{"alice's password", "bob's password", "not alice's secret"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}

// connectAs connects over TLS (not verifying the test certificate) with
// a password.
func connectAs(t *testing.T, addr, user, password string) (*pgx.Conn, error) {
	t.Helper()
	cfg, err := pgx.ParseConfig("postgres://" + addr + "/basin?sslmode=require")
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Password = user, password
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return pgx.ConnectConfig(ctx, cfg)
}
