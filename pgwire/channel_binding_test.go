package pgwire

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestSCRAMChannelBinding: over TLS the server offers SCRAM-SHA-256-PLUS
// (tls-server-end-point), so clients that require channel binding, pgx
// and libpq with channel_binding=require, log in; a wrong password still
// fails. Without TLS there is nothing to bind to: such a client refuses
// to log in, and one that does not require it logs in with plain
// SCRAM-SHA-256.
func TestSCRAMChannelBinding(t *testing.T) {
	ts := startServer(t, Options{Authenticator: testUsers(t, AuthSCRAM), TLSConfig: selfSignedTLS(t)})
	conn := ts.connect(t, "user=alice", "password='correct horse'", "sslmode=require", "channel_binding=require")
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Fatalf("connection is %T, want TLS", conn.PgConn().Conn())
	}
	checkSelectOne(t, conn)

	_, err := pgx.ConnectConfig(testCtx(t), ts.pgxConfig(t, "user=alice", "password='not the password'", "sslmode=require", "channel_binding=require"))
	if pe := pgError(t, err); pe.Code != "28P01" {
		t.Errorf("wrong password with channel binding: %s %q", pe.Code, pe.Message)
	}
	if _, err := pgx.ConnectConfig(testCtx(t), ts.pgxConfig(t, "user=alice", "password='correct horse'", "sslmode=disable", "channel_binding=require")); err == nil {
		t.Errorf("channel_binding=require without TLS logged in")
	}
	checkSelectOne(t, ts.connect(t, "user=alice", "password='correct horse'", "sslmode=disable"))

	psql := func(sslmode, password string) (string, string, int) {
		conn := strings.Replace(ts.connString(), "sslmode=disable", "sslmode="+sslmode+" channel_binding=require", 1) + " user=alice"
		cmd := ts.psql(t, conn, "-c", "select 1")
		cmd.Env = append(cmd.Env, "PGPASSWORD="+password)
		return run(t, cmd)
	}
	if out, errOut, code := psql("require", "correct horse"); code != 0 || out != "1\n" {
		t.Errorf("psql with channel_binding=require over TLS: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code := psql("require", "not the password"); code != 2 || !strings.Contains(errOut, "password authentication failed") {
		t.Errorf("psql with channel binding and a wrong password: exit %d, stderr %q", code, errOut)
	}
	checkLogsHoldNo(t, ts.logs, secrets...)
}
