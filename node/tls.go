package node

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// loadTLS reads the Postgres server's certificate chain and private key
// (PEM) and returns the TLS configuration pgwire upgrades connections
// with: TLS 1.2 or later, Go's default cipher suites. It returns nil
// when neither file is given. Errors name the file and what is wrong
// with it. The files are read once, at start: a renewed certificate
// takes a restart.
func loadTLS(certFile, keyFile string, log *slog.Logger) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading the TLS certificate (--tls-cert): %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading the TLS private key (--tls-key): %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s with private key %s: %w", certFile, keyFile, err)
	}
	if leaf := cert.Leaf; leaf != nil {
		now := time.Now()
		switch {
		case now.After(leaf.NotAfter):
			log.Warn("the TLS certificate has expired; clients that verify it will refuse to connect",
				"file", certFile, "not_after", leaf.NotAfter)
		case now.Before(leaf.NotBefore):
			log.Warn("the TLS certificate is not valid yet; clients that verify it will refuse to connect",
				"file", certFile, "not_before", leaf.NotBefore)
		}
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
	}, nil
}
