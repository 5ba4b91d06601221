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
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/basindb/basin/pgwire"
)

// TestPeerRefusesCleartext is the attack of a fake peer (issue 14):
// something at a peer's Postgres address that asks for the password in
// cleartext (or MD5, or lets the node in without asking) used to be sent
// the cluster secret as it is. A node now accepts only SCRAM from a
// peer: it hangs up, and the fake peer receives nothing of the secret.
func TestPeerRefusesCleartext(t *testing.T) {
	const secret = "the-cluster-secret-0123456789"
	for _, tc := range []struct {
		name string
		ask  pgproto3.BackendMessage
	}{
		{"cleartext", &pgproto3.AuthenticationCleartextPassword{}},
		{"md5", &pgproto3.AuthenticationMD5Password{Salt: [4]byte{1, 2, 3, 4}}},
		{"no password", &pgproto3.AuthenticationOk{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			got := make(chan []byte, 1)
			go func() {
				nc, err := ln.Accept()
				if err != nil {
					got <- nil
					return
				}
				defer nc.Close()
				_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
				be := pgproto3.NewBackend(nc, nc)
				if _, err := be.ReceiveStartupMessage(); err != nil {
					got <- nil
					return
				}
				be.Send(tc.ask)
				if _, ok := tc.ask.(*pgproto3.AuthenticationOk); ok {
					be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
				}
				_ = be.Flush()
				// Everything the node sends after the request, until it
				// hangs up.
				rest, _ := io.ReadAll(nc)
				got <- rest
			}()
			cfg, err := peerPoolConfig(&Options{Auth: "scram", ClusterSecret: secret}, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
			if err == nil {
				conn.Close(ctx)
				t.Fatalf("connected to a peer that asked for %s", tc.name)
			}
			if !strings.Contains(err.Error(), "authentication") && !strings.Contains(err.Error(), "auth") {
				t.Errorf("the error does not say authentication was refused: %v", err)
			}
			rest := <-got
			if bytes.Contains(rest, []byte(secret)) || len(rest) > 0 && rest[0] == 'p' {
				t.Fatalf("the node answered a %s request with %q", tc.name, rest)
			}
		})
	}
}

// writeClusterCerts writes a cluster CA and a node certificate it signs
// for 127.0.0.1, and a second, unrelated CA; it returns the files.
func writeClusterCerts(t *testing.T, dir string) (caFile, certFile, keyFile, otherCAFile string) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newCA := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, string) {
		key := newKey()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		ca, _ := x509.ParseCertificate(der)
		return ca, key, write(name+".crt", "CERTIFICATE", der)
	}
	ca, caKey, caFile := newCA("cluster-ca")
	_, _, otherCAFile = newCA("other-ca")
	key := newKey()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return caFile, write("node.crt", "CERTIFICATE", der), write("node.key", "PRIVATE KEY", keyDER), otherCAFile
}

// TestPeerConnectionVerified: a node reads from a peer over TLS with the
// peer's certificate verified against --cluster-ca, as the cluster user
// with SCRAM and channel binding offered (pgwire's
// TestSCRAMChannelBinding shows nodes offer SCRAM-SHA-256-PLUS, and that
// a client requiring it connects). A peer whose
// certificate another CA signed is refused. And --require-tls refuses a
// plaintext client with 28000.
func TestPeerConnectionVerified(t *testing.T) {
	dir := t.TempDir()
	caFile, cert, key, otherCA := writeClusterCerts(t, dir)
	const secret = "the-cluster-secret-0123456789"
	n := startNode(t, filepath.Join(dir, "data"), func(o *Options) {
		o.TLSCert, o.TLSKey, o.ClusterCA, o.RequireTLS = cert, key, caFile, true
		o.Auth = "scram"
		o.Users = map[string]string{"alice": "alice's password"}
		o.ClusterSecret = secret
	})
	peer := func(ca string) (*pgx.Conn, error) {
		cfg, err := peerPoolConfig(&Options{Auth: "scram", ClusterSecret: secret, TLSCert: cert, ClusterCA: ca}, n.PGAddr())
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ConnConfig.ChannelBinding != "prefer" || cfg.ConnConfig.RequireAuth != "scram-sha-256" {
			t.Fatalf("channel_binding %q, require_auth %q", cfg.ConnConfig.ChannelBinding, cfg.ConnConfig.RequireAuth)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return pgx.ConnectConfig(ctx, cfg.ConnConfig)
	}
	conn, err := peer(caFile)
	if err != nil {
		t.Fatalf("connecting to a peer with a certificate of the cluster CA: %v", err)
	}
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Errorf("connection is %T, want TLS", conn.PgConn().Conn())
	}
	var one int
	if err := conn.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("SELECT 1: %d %v", one, err)
	}
	conn.Close(context.Background())

	if conn, err := peer(otherCA); err == nil {
		conn.Close(context.Background())
		t.Fatalf("connected to a peer whose certificate is not the cluster CA's")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("refusing an unverified peer: %v", err)
	}

	// --require-tls: a plaintext client is refused before authentication.
	cfg, err := pgx.ParseConfig("postgres://alice@" + n.PGAddr() + "/basin?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = "alice's password"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pgx.ConnectConfig(ctx, cfg)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "28000" || pe.Message != "this server accepts only TLS connections" {
		t.Fatalf("plaintext client with --require-tls: %v, want 28000", err)
	}
	conn, err = connectAs(t, n.PGAddr(), "alice", "alice's password")
	if err != nil {
		t.Fatalf("TLS client with --require-tls: %v", err)
	}
	conn.Close(context.Background())
}

// TestClusterUserAlwaysSCRAM: under --auth password the cluster user
// still logs in with SCRAM, since peers accept nothing else.
func TestClusterUserAlwaysSCRAM(t *testing.T) {
	u, err := newUsers(pgwire.AuthPassword, map[string]string{"alice": "pw", ClusterUser: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	if m := u.MethodFor(ClusterUser); m != pgwire.AuthSCRAM {
		t.Errorf("cluster user: %v, want scram", m)
	}
	if m := u.MethodFor("alice"); m != pgwire.AuthPassword {
		t.Errorf("alice: %v, want password", m)
	}
}
