package pgwire

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"
)

// Verifiers made by PostgreSQL 15 (CREATE ROLE ... PASSWORD, then
// pg_authid.rolpassword), with their passwords. carol's and dave's
// passwords change under SASLprep: U+2168 ROMAN NUMERAL NINE becomes
// "IX", and the soft hyphen in dave's is mapped to nothing.
var postgresVerifiers = []struct {
	user, password, verifier string
	alsoMatches              string
}{
	{"alice", "correct horse", "SCRAM-SHA-256$4096:0GPJzKfPjdrh+1e0LbqrUw==$7Jk5yccEriHlDX04cXd8nx1WdRTmqqZP4lSGI2BJw9g=:FtLinFfmaPJUwMirnh8tTokFfTFHcUNxEatbfKP5+/8=", ""},
	{"bob", "pässwörd", "SCRAM-SHA-256$4096:E7AYR0CPq5dm3sZ4u0ealA==$6NCnGLwY2GymMqlgNpGsvL3iZHAOGErxQJB6lxqt4CA=:TYahOZJNgdG4Nig8Qnv1vPRxAwAIpq62lp8BF/1Xv04=", ""},
	{"carol", "\u2168", "SCRAM-SHA-256$4096:RPmR2Gd0GJYMjvTe23MNzw==$u/4MmhHtqvH+OSK/lKUhSFQg1AQjOccC23FU9VnCDVE=:rPEZVDeoM5dPiC9G4vabXKN047r9rFeqlD9KtbEK6TQ=", "IX"},
	{"dave", "pa\u00adss", "SCRAM-SHA-256$4096:w9hp++r0ia2GgigXv1u+1A==$s/Y5HnOWWgANlDuBoH5KcyQy3mKpSntFH1HaOL10qxk=:RSuLm80XpcGaN216mCbt2IGPckL5FKQrvNmJOLi0X78=", "pass"},
}

// pgxPassword is the password to give pgx for a user whose password
// changes under SASLprep: pgx normalizes with PRECIS OpaqueString, which
// differs from SASLprep for these, so pgx cannot log in as carol or dave
// with their passwords as typed on a real PostgreSQL either (checked
// against PostgreSQL 15); it gives the SASLprep form instead. psql
// (libpq) uses SASLprep and is tested with the passwords as typed.
func pgxPassword(password, saslprepped string) string {
	if saslprepped != "" {
		return saslprepped
	}
	return password
}

// staticUsers is an Authenticator over a fixed map.
type staticUsers struct {
	method AuthMethod
	users  map[string]*SCRAMVerifier
}

func (u *staticUsers) Method() AuthMethod { return u.method }
func (u *staticUsers) Verifier(user string) (*SCRAMVerifier, bool) {
	v, ok := u.users[user]
	return v, ok
}

// testUsers returns an Authenticator for method with the Postgres-made
// verifiers above, plus "eve" with a verifier made here.
func testUsers(t testing.TB, method AuthMethod) *staticUsers {
	t.Helper()
	u := &staticUsers{method: method, users: map[string]*SCRAMVerifier{}}
	for _, pv := range postgresVerifiers {
		v, err := ParseSCRAMVerifier(pv.verifier)
		if err != nil {
			t.Fatal(err)
		}
		u.users[pv.user] = v
	}
	v, err := NewSCRAMVerifier("eve's secret", 0)
	if err != nil {
		t.Fatal(err)
	}
	u.users["eve"] = v
	return u
}

// secrets are the passwords the tests send; no log line may hold one.
var secrets = []string{"correct horse", "pässwörd", "eve's secret", "not the password"}

// checkLogsHoldNo fails if any log record's message or attribute
// contains one of the strings.
func checkLogsHoldNo(t *testing.T, logs *logRecords, strs ...string) {
	t.Helper()
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, r := range logs.records {
		var b strings.Builder
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&b, " %s=%s", a.Key, a.Value.String())
			return true
		})
		for _, s := range strs {
			if s != "" && strings.Contains(b.String(), s) {
				t.Errorf("log record holds the secret %q: %s", s, b.String())
			}
		}
	}
}

func TestSCRAMVerifierFromPostgres(t *testing.T) {
	for _, pv := range postgresVerifiers {
		v, err := ParseSCRAMVerifier(pv.verifier)
		if err != nil {
			t.Fatalf("%s: %v", pv.user, err)
		}
		if got := v.String(); got != pv.verifier {
			t.Errorf("%s: String() = %s, want %s", pv.user, got, pv.verifier)
		}
		if !v.matches(pv.password) {
			t.Errorf("%s: the verifier Postgres made does not match its password", pv.user)
		}
		if pv.alsoMatches != "" && !v.matches(pv.alsoMatches) {
			t.Errorf("%s: the SASLprep form %q does not match", pv.user, pv.alsoMatches)
		}
		if v.matches(pv.password+"x") || v.matches("") {
			t.Errorf("%s: a wrong password matches", pv.user)
		}
		// Derived here with Postgres's salt, the same keys.
		w, err := deriveSCRAMVerifier(pv.password, v.Salt, v.Iterations)
		if err != nil {
			t.Fatal(err)
		}
		if w.String() != pv.verifier {
			t.Errorf("%s: derived %s, Postgres made %s", pv.user, w, pv.verifier)
		}
	}
}

// TestSCRAMExchangeRFC7677 runs the example exchange of RFC 7677 section
// 3 against a verifier derived here, with the server nonce fixed.
func TestSCRAMExchangeRFC7677(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	v, err := deriveSCRAMVerifier("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) {
		return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(v.Salt), Iters: v.Iterations}, StoredKey: v.StoredKey, ServerKey: v.ServerKey}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	conv := srv.WithNonceGenerator(func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }).NewConversation()
	first, err := conv.Step("n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; err != nil || first != want {
		t.Fatalf("server-first %q (%v), want %q", first, err, want)
	}
	final, err := conv.Step("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; err != nil || final != want {
		t.Fatalf("server-final %q (%v), want %q", final, err, want)
	}
}

func TestNewSCRAMVerifier(t *testing.T) {
	v1, err := NewSCRAMVerifier("s3cret", 0)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := NewSCRAMVerifier("s3cret", 5000)
	if err != nil {
		t.Fatal(err)
	}
	if v1.Iterations != DefaultSCRAMIterations || v2.Iterations != 5000 || len(v1.Salt) != 16 {
		t.Errorf("iterations %d and %d, salt %d bytes", v1.Iterations, v2.Iterations, len(v1.Salt))
	}
	if bytes.Equal(v1.Salt, v2.Salt) {
		t.Error("two verifiers got the same salt")
	}
	for _, v := range []*SCRAMVerifier{v1, v2} {
		p, err := ParseSCRAMVerifier(v.String())
		if err != nil {
			t.Fatal(err)
		}
		if p.String() != v.String() || !p.matches("s3cret") || p.matches("s3cret ") {
			t.Errorf("%s does not round-trip", v)
		}
	}
	if _, err := NewSCRAMVerifier("x", -1); err == nil {
		t.Error("negative iteration count accepted")
	}
}

func TestParseSCRAMVerifierErrors(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for _, s := range []string{
		"",
		"hunter2",
		"md5a3556571e93b0d20722ba62be61e8c2d",
		"SCRAM-SHA-256$4096:c2FsdA==",
		"SCRAM-SHA-256$4096:c2FsdA==$" + key,
		"SCRAM-SHA-256$0:c2FsdA==$" + key + ":" + key,
		"SCRAM-SHA-256$x:c2FsdA==$" + key + ":" + key,
		"SCRAM-SHA-256$4096:!!!$" + key + ":" + key,
		"SCRAM-SHA-256$4096:$" + key + ":" + key,
		"SCRAM-SHA-256$4096:c2FsdA==$c2hvcnQ=:" + key,
		"SCRAM-SHA-256$4096:c2FsdA==$" + key + ":not base64 hunter2",
	} {
		_, err := ParseSCRAMVerifier(s)
		if !errors.Is(err, ErrBadSCRAMVerifier) {
			t.Errorf("%q: got %v, want ErrBadSCRAMVerifier", s, err)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), key) {
			t.Errorf("%q: the error quotes the verifier: %v", s, err)
		}
	}
}

// TestPgxSCRAM logs in with pgx's SCRAM client, in plaintext and over TLS
// (where pgx binds the channel with SCRAM-SHA-256-PLUS, which the server
// offers there: TestSCRAMChannelBinding). A wrong password and an unknown user
// get the same FATAL 28P01; the log tells them apart and never holds a
// password.
func TestPgxSCRAM(t *testing.T) {
	ts := startServer(t, Options{Authenticator: testUsers(t, AuthSCRAM), TLSConfig: selfSignedTLS(t)})
	for _, pv := range postgresVerifiers {
		checkSelectOne(t, ts.connect(t, "user="+pv.user, "password='"+pgxPassword(pv.password, pv.alsoMatches)+"'"))
	}
	checkSelectOne(t, ts.connect(t, "user=eve", `password='eve\'s secret'`))
	conn := ts.connect(t, "user=alice", "password='correct horse'", "sslmode=require")
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Fatalf("connection is %T, want TLS", conn.PgConn().Conn())
	}
	checkSelectOne(t, conn)

	for _, tc := range []struct{ user, password, reason string }{
		{"alice", "not the password", "wrong password"},
		{"nobody", "correct horse", "no such user"},
		{"alice", "", "wrong password"},
	} {
		_, err := pgx.ConnectConfig(testCtx(t), ts.pgxConfig(t, "user="+tc.user, "password='"+tc.password+"'"))
		pe := pgError(t, err)
		want := fmt.Sprintf(`password authentication failed for user "%s"`, tc.user)
		if pe.Code != "28P01" || pe.Severity != "FATAL" || pe.Message != want {
			t.Errorf("%s/%q: got %s %s %q", tc.user, tc.password, pe.Severity, pe.Code, pe.Message)
		}
		found := false
		for _, attrs := range ts.logs.find(slog.LevelWarn, "password authentication failed") {
			if attrs["user"] == tc.user && attrs["reason"] == tc.reason && attrs["method"] == "scram" && attrs["remote"] != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("no warning logged for %s (%s): %v", tc.user, tc.reason, ts.logs.find(slog.LevelWarn, ""))
		}
	}
	checkLogsHoldNo(t, ts.logs, secrets...)
	eventually(t, "failed sessions to be unregistered", func() bool { return ts.sessionCount() == len(postgresVerifiers)+2 })
}

// TestPsqlSCRAM logs in with libpq, which binds the channel over TLS by
// default (channel_binding=prefer) and sends 'n' in plaintext.
func TestPsqlSCRAM(t *testing.T) {
	ts := startServer(t, Options{Authenticator: testUsers(t, AuthSCRAM), TLSConfig: selfSignedTLS(t)})
	psql := func(sslmode, user, password string) (string, string, int) {
		conn := strings.Replace(ts.connString(), "sslmode=disable", "sslmode="+sslmode, 1) + " user=" + user
		cmd := ts.psql(t, conn, "-c", "select 1")
		cmd.Env = append(cmd.Env, "PGPASSWORD="+password)
		return run(t, cmd)
	}
	for _, sslmode := range []string{"disable", "require"} {
		for _, pv := range postgresVerifiers {
			if out, errOut, code := psql(sslmode, pv.user, pv.password); code != 0 || out != "1\n" {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q", sslmode, pv.user, code, out, errOut)
			}
		}
		for _, user := range []string{"alice", "nobody"} {
			_, errOut, code := psql(sslmode, user, "not the password")
			want := fmt.Sprintf(`FATAL:  password authentication failed for user "%s"`, user)
			if code != 2 || !strings.Contains(errOut, want) {
				t.Errorf("%s %s with a wrong password: exit %d, stderr %q", sslmode, user, code, errOut)
			}
		}
	}
	// psql with no password at all: libpq hangs up when asked for one,
	// which is no protocol violation.
	cmd := ts.psql(t, strings.Replace(ts.connString(), "user=basin", "user=alice", 1), "-w", "-c", "select 1")
	if _, errOut, code := run(t, cmd); code != 2 || !strings.Contains(errOut, "no password supplied") {
		t.Errorf("no password: exit %d, stderr %q", code, errOut)
	}
	if v := ts.logs.find(slog.LevelWarn, "protocol violation"); len(v) != 0 {
		t.Errorf("protocol violations logged: %v", v)
	}
	checkLogsHoldNo(t, ts.logs, secrets...)
}

// TestCleartextPassword checks the password method: refused with 28000
// before the password is sent on a plaintext connection, accepted over
// TLS, with pgx and psql.
func TestCleartextPassword(t *testing.T) {
	ts := startServer(t, Options{Authenticator: testUsers(t, AuthPassword), TLSConfig: selfSignedTLS(t)})

	_, err := pgx.ConnectConfig(testCtx(t), ts.pgxConfig(t, "user=alice", "password='correct horse'"))
	pe := pgError(t, err)
	if pe.Code != "28000" || pe.Message != "cleartext password authentication requires a TLS connection" {
		t.Errorf("without TLS: %s %q", pe.Code, pe.Message)
	}

	for _, pv := range postgresVerifiers {
		conn := ts.connect(t, "user="+pv.user, "password='"+pgxPassword(pv.password, pv.alsoMatches)+"'", "sslmode=require")
		checkSelectOne(t, conn)
	}
	for _, tc := range []struct{ user, password string }{{"alice", "not the password"}, {"nobody", "correct horse"}} {
		_, err := pgx.ConnectConfig(testCtx(t), ts.pgxConfig(t, "user="+tc.user, "password='"+tc.password+"'", "sslmode=require"))
		pe := pgError(t, err)
		if pe.Code != "28P01" || pe.Message != fmt.Sprintf(`password authentication failed for user "%s"`, tc.user) {
			t.Errorf("%s: %s %q", tc.user, pe.Code, pe.Message)
		}
	}

	psql := func(sslmode, password string) (string, string, int) {
		conn := strings.Replace(ts.connString(), "sslmode=disable", "sslmode="+sslmode, 1) + " user=alice"
		cmd := ts.psql(t, conn, "-c", "select 1")
		cmd.Env = append(cmd.Env, "PGPASSWORD="+password)
		return run(t, cmd)
	}
	if out, errOut, code := psql("require", "correct horse"); code != 0 || out != "1\n" {
		t.Errorf("psql over TLS: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code := psql("disable", "correct horse"); code != 2 || !strings.Contains(errOut, "requires a TLS connection") {
		t.Errorf("psql without TLS: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := psql("require", "not the password"); code != 2 || !strings.Contains(errOut, `password authentication failed for user "alice"`) {
		t.Errorf("psql wrong password: exit %d, stderr %q", code, errOut)
	}
	checkLogsHoldNo(t, ts.logs, secrets...)
}

// rawSASLStart sends a StartupMessage for user and reads up to
// AuthenticationSASL.
func rawSASLStart(t *testing.T, nc net.Conn, user string) *pgproto3.Frontend {
	t.Helper()
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{
		ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters:      map[string]string{"user": user, "database": "basin"},
	})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	msg, err := fe.Receive()
	if err != nil {
		t.Fatal(err)
	}
	sasl, ok := msg.(*pgproto3.AuthenticationSASL)
	if !ok || len(sasl.AuthMechanisms) != 1 || sasl.AuthMechanisms[0] != "SCRAM-SHA-256" {
		t.Fatalf("got %#v, want AuthenticationSASL [SCRAM-SHA-256]", msg)
	}
	return fe
}

// receive reads one message from fe.
func receive(t *testing.T, fe *pgproto3.Frontend) pgproto3.BackendMessage {
	t.Helper()
	msg, err := fe.Receive()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// expectError reads a FATAL ErrorResponse with code, then the server
// closing the connection.
func expectError(t *testing.T, nc net.Conn, fe *pgproto3.Frontend, code string) *pgproto3.ErrorResponse {
	t.Helper()
	msg := receive(t, fe)
	e, ok := msg.(*pgproto3.ErrorResponse)
	if !ok || e.Code != code || e.Severity != "FATAL" {
		t.Fatalf("got %#v, want FATAL %s", msg, code)
	}
	if rest := readUntilClosed(t, nc); len(rest) != 0 {
		t.Fatalf("more after the error: %q", rest)
	}
	return e
}

// TestSCRAMExchangeRaw drives the exchange message by message with a
// SCRAM client of its own, for what real clients never send.
func TestSCRAMExchangeRaw(t *testing.T) {
	ts := startServer(t, Options{Authenticator: testUsers(t, AuthSCRAM)})
	client, err := scram.SHA256.NewClient("", "correct horse", "")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("pipelined", func(t *testing.T) {
		// The client-final-message and a Query in one write: the Query
		// must not be lost to a buffered read during authentication.
		nc := ts.dial(t)
		fe := rawSASLStart(t, nc, "alice")
		conv := client.NewConversation()
		first, _ := conv.Step("")
		fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte(first)})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		cont, ok := receive(t, fe).(*pgproto3.AuthenticationSASLContinue)
		if !ok {
			t.Fatal("no AuthenticationSASLContinue")
		}
		final, err := conv.Step(string(cont.Data))
		if err != nil {
			t.Fatal(err)
		}
		fe.Send(&pgproto3.SASLResponse{Data: []byte(final)})
		fe.Send(&pgproto3.Query{String: "select 1"})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		sf, ok := receive(t, fe).(*pgproto3.AuthenticationSASLFinal)
		if !ok {
			t.Fatal("no AuthenticationSASLFinal")
		}
		if _, err := conv.Step(string(sf.Data)); err != nil || !conv.Valid() {
			t.Fatalf("the server's signature does not verify: %v", err)
		}
		var got []string
		for {
			msg := receive(t, fe)
			got = append(got, fmt.Sprintf("%T", msg))
			if dr, ok := msg.(*pgproto3.DataRow); ok && string(dr.Values[0]) != "1" {
				t.Errorf("row %q", dr.Values[0])
			}
			if _, ok := msg.(*pgproto3.CommandComplete); ok {
				break
			}
			if _, ok := msg.(*pgproto3.ErrorResponse); ok {
				t.Fatalf("error: %#v", msg)
			}
		}
		if got[0] != "*pgproto3.AuthenticationOk" || !strings.Contains(strings.Join(got, " "), "DataRow") {
			t.Errorf("got %v", got)
		}
	})

	t.Run("bad proof", func(t *testing.T) {
		nc := ts.dial(t)
		fe := rawSASLStart(t, nc, "alice")
		conv := client.NewConversation()
		first, _ := conv.Step("")
		fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte(first)})
		_ = fe.Flush()
		cont := receive(t, fe).(*pgproto3.AuthenticationSASLContinue)
		final, _ := conv.Step(string(cont.Data))
		i := strings.Index(final, ",p=")
		proof, _ := base64.StdEncoding.DecodeString(final[i+3:])
		proof[0] ^= 1
		tampered := final[:i+3] + base64.StdEncoding.EncodeToString(proof)
		fe.Send(&pgproto3.SASLResponse{Data: []byte(tampered)})
		_ = fe.Flush()
		e := expectError(t, nc, fe, "28P01")
		if e.Message != `password authentication failed for user "alice"` {
			t.Errorf("message %q", e.Message)
		}
		checkLogsHoldNo(t, ts.logs, final[i+3:], tampered[i+3:])
	})

	t.Run("unknown user salt is stable", func(t *testing.T) {
		salt := func(user string) string {
			nc := ts.dial(t)
			fe := rawSASLStart(t, nc, user)
			first, _ := client.NewConversation().Step("")
			fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte(first)})
			_ = fe.Flush()
			cont := receive(t, fe).(*pgproto3.AuthenticationSASLContinue)
			_, s, _ := strings.Cut(string(cont.Data), ",s=")
			s, iters, _ := strings.Cut(s, ",i=")
			if iters != "4096" {
				t.Errorf("%s: iterations %s", user, iters)
			}
			return s
		}
		if a, b, c := salt("nobody"), salt("nobody"), salt("nobody2"); a != b || a == c {
			t.Errorf("mock salts: %s, %s, %s", a, b, c)
		}
	})

	for _, tc := range []struct {
		name      string
		send      pgproto3.FrontendMessage
		wantMsg   string
		wantState string
	}{
		{name: "PLUS mechanism", send: &pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256-PLUS", Data: []byte("p=tls-server-end-point,,n=,r=abc")},
			wantMsg: "client selected an invalid SASL authentication mechanism"},
		{name: "gs2 flag p", send: &pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("p=tls-server-end-point,,n=,r=abc")},
			wantMsg: "malformed SCRAM message"},
		{name: "garbage", send: &pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("hello")},
			wantMsg: "malformed SCRAM message"},
		{name: "query instead", send: &pgproto3.Query{String: "select 1"},
			wantMsg: "expected SASL response, got message type 'Q'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := ts.dial(t)
			fe := rawSASLStart(t, nc, "alice")
			fe.Send(tc.send)
			_ = fe.Flush()
			if e := expectError(t, nc, fe, "08P01"); e.Message != tc.wantMsg {
				t.Errorf("message %q, want %q", e.Message, tc.wantMsg)
			}
		})
	}

	t.Run("hang up", func(t *testing.T) {
		nc := ts.dial(t)
		rawSASLStart(t, nc, "alice")
		nc.Close()
	})
	eventually(t, "every session to be unregistered", func() bool { return ts.sessionCount() == 0 })
	if n := ts.b.open.Load(); n != 0 {
		t.Errorf("%d sessions opened", n)
	}
}

func TestOptionsValidateAuth(t *testing.T) {
	if _, err := NewServer(Options{Authenticator: &staticUsers{method: AuthPassword}}, newFakeBackend()); err == nil ||
		!strings.Contains(err.Error(), "TLS") {
		t.Errorf("password without TLS: %v", err)
	}
	if _, err := NewServer(Options{Authenticator: &staticUsers{method: AuthMethod(9)}}, newFakeBackend()); err == nil {
		t.Error("unknown method accepted")
	}
	for _, s := range []string{"trust", "scram", "scram-sha-256", "password"} {
		m, err := ParseAuthMethod(s)
		if err != nil || (m.String() != s && s != "scram-sha-256") {
			t.Errorf("%s: %v %v", s, m, err)
		}
	}
	if _, err := ParseAuthMethod("md5"); err == nil {
		t.Error("md5 accepted")
	}
}

// FuzzSCRAMAuth feeds arbitrary bytes to the authentication exchange, in
// place of the client's SASL responses: the server neither panics nor
// hangs, nor opens a session. Run with
//
//	go test ./pgwire -run '^$' -fuzz FuzzSCRAMAuth
func FuzzSCRAMAuth(f *testing.F) {
	enc := func(msgs ...pgproto3.FrontendMessage) []byte {
		var b []byte
		for _, m := range msgs {
			var err error
			if b, err = m.Encode(b); err != nil {
				f.Fatal(err)
			}
		}
		return b
	}
	first := "n,,n=,r=fyko+d2lbbFgONRv9qkxdawL"
	for _, seed := range [][]byte{
		enc(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte(first)},
			&pgproto3.SASLResponse{Data: []byte("c=biws,r=fyko+d2lbbFgONRv9qkxdawL,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")}),
		enc(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("y,,n=,r=abc")}, &pgproto3.SASLResponse{Data: []byte("c=eSws,r=abc")}),
		enc(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,a=x=2C,n=,r=abc,m=ext")}),
		enc(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256-PLUS"}),
		enc(&pgproto3.PasswordMessage{Password: "hunter2"}),
		enc(&pgproto3.Terminate{}),
		{'p', 0, 0, 0, 3},
		{'p', 0x7f, 0xff, 0xff, 0xff},
	} {
		f.Add(seed)
	}
	b := newFakeBackend()
	b.noBlock = true
	s, err := NewServer(Options{
		Logger:         slog.New(slog.DiscardHandler),
		StartupTimeout: testTimeout,
		Authenticator:  testUsers(f, AuthSCRAM),
	}, b)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	startup := enc(&pgproto3.StartupMessage{
		ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters:      map[string]string{"user": "alice", "database": "basin"},
	})

	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.serveConn(server)
		}()
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			_, _ = io.Copy(io.Discard, client)
		}()
		_ = client.SetWriteDeadline(time.Now().Add(testTimeout))
		_, _ = client.Write(append(append([]byte{}, startup...), data...))
		_ = client.Close()
		select {
		case <-done:
		case <-time.After(testTimeout):
			t.Fatalf("connection did not end within %v of the client hanging up", testTimeout)
		}
		<-drained
		if n := b.open.Load(); n != 0 {
			t.Fatalf("a session was opened without a valid proof")
		}
	})
}
