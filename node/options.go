package node

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/basindb/basin/pgwire"
	"github.com/basindb/basin/serde"
)

// Options configure a node. Every field has a flag, a BASIN_* environment
// variable and a config-file key (see cmd/basin and docs/configuration.md).
type Options struct {
	// DataDir holds the node's state: Pebble stores, the embedded broker's
	// log and the node id. Default "./basin-data".
	DataDir string
	// PGAddr is the Postgres wire address. Default "127.0.0.1:5433".
	PGAddr string
	// HTTPAddr serves /metrics, /healthz and the cluster endpoints.
	// Default "127.0.0.1:8433"; "" or "off" disables it.
	HTTPAddr string
	// Brokers are the Kafka seed brokers. Empty (the default) starts an
	// embedded broker under DataDir/kafka.
	Brokers []string
	// BrokerAddr is where the embedded broker listens. The zero value
	// is "127.0.0.1:0", any free port, which is what in-process nodes
	// (tests, many at a time) want; `basin serve` gives
	// DefaultBrokerAddr, a port Kafka tools find without being told,
	// with BrokerAddrFallback.
	BrokerAddr string
	// BrokerAddrFallback makes a BrokerAddr whose port is taken fall
	// back to a free port on the same host, logged as a warning naming
	// both, instead of failing the start. `basin serve` sets it when
	// the address is its default, not one the user gave (a given
	// address that is taken stays an error). Default false.
	BrokerAddrFallback bool
	// NodeID is the node's static identity. Default: generated on first
	// start and kept in DataDir/node-id.
	NodeID string
	// Cluster names the cluster: nodes with the same Cluster on the same
	// Kafka share the work. Default "basin".
	Cluster string
	// DefaultPartitions is the partition count of topics basin creates
	// when a statement names none. Default 4.
	DefaultPartitions int
	// MaxConnections bounds concurrent Postgres sessions. Default 100.
	MaxConnections int
	// StandbyReplicas is the number of standby replicas of each task
	// when the view's WITH (num.standby.replicas = N) says nothing. The
	// command line's default is DefaultStandbyReplicas; here the zero
	// value means none.
	StandbyReplicas int
	// AcceptableRecoveryLag is how far behind (in changelog records) a
	// node's replica of a task may be for the task to move there; a node
	// further behind gets a warm-up replica first. Default 10000.
	AcceptableRecoveryLag int64
	// MaxWarmups bounds the warm-up replicas in the cluster at a time.
	// Default 2. This and the other counts and durations below take 0
	// for their default and refuse a negative value.
	MaxWarmups int
	// ProbingInterval is how often the group leader rebalances while
	// warm-ups are catching up, to move the tasks of those that have.
	// Default 1 minute.
	ProbingInterval time.Duration
	// SessionTimeout is how long the group waits for a silent node (a
	// kill -9, a hang) before its tasks move: also how long a node
	// restarted with the same --node-id has to come back and keep its
	// tasks without a rebalance. Default 6s.
	SessionTimeout time.Duration
	// HeartbeatInterval is how often a node sends a heartbeat to every
	// other node of its cluster (POST /heartbeat); a node silent for 5
	// intervals is taken for down by the others' reads. Default 100ms.
	HeartbeatInterval time.Duration
	// LagReportInterval is how often a node sends its tasks' lags to
	// every other node (POST /lag). Default 1s.
	LagReportInterval time.Duration
	// TLSCert and TLSKey are PEM files with the Postgres server's
	// certificate chain and its private key (flags --tls-cert and
	// --tls-key). With both, SSLRequest is answered 'S' and TLS 1.2 or
	// later is negotiated; with neither (the default) it is answered
	// 'N' and clients go on in plaintext. One without the other is an
	// error. With them HTTPAddr serves HTTPS only, and the node calls
	// its peers' HTTP addresses with https.
	TLSCert string
	TLSKey  string
	// ClusterCA is a PEM file with the CA certificate(s) that sign the
	// nodes' TLS certificates (--cluster-ca). With it, a node reading
	// from a peer over TLS verifies the peer's certificate against it and
	// the peer's Postgres address (verify-full); without it (the
	// default) the connection is encrypted but the peer not verified.
	// Needs TLSCert.
	ClusterCA string
	// RequireTLS refuses Postgres connections that do not use TLS
	// (--require-tls), with 28000 before authentication, so no password
	// exchange ever runs in plaintext. Needs TLSCert. Default off.
	RequireTLS bool
	// Auth is how Postgres clients authenticate (--auth):
	//   - "trust" (the default): any user name, no password. Allowed
	//     only when PGAddr is a loopback address, unless
	//     AllowTrustRemote.
	//   - "scram": SCRAM-SHA-256 against Users; the password never
	//     crosses the wire.
	//   - "password": the password in cleartext, checked against Users;
	//     only over TLS, so it needs TLSCert and TLSKey.
	Auth string
	// Users maps each user name to its password or, better, its
	// SCRAM-SHA-256 verifier as Postgres stores it
	// ("SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>",
	// which `basin passwd` prints). "scram" and "password" need at least
	// one; "trust" ignores them. Names are case-sensitive. It is the
	// config-file key users (a map) or BASIN_USERS (a JSON object), and
	// deliberately has no flag: a command line is visible to every
	// local user.
	Users map[string]string
	// ClusterSecret is the password the nodes of a cluster use to read
	// from each other (forwarded reads) as user basin_cluster, when Auth
	// is not "trust": every node of the cluster needs the same one. It
	// is the config-file key cluster-secret or BASIN_CLUSTER_SECRET and,
	// like Users, has no flag. Under any Auth, a key derived from it
	// signs the node's HTTP requests to its peers, and the node refuses
	// unsigned ones on the cluster endpoints (peerauth.go).
	ClusterSecret string
	// Pprof serves Go's profiles on HTTPAddr under /debug/pprof/
	// (--pprof). Default false: a profile shows the process's command
	// line and memory, and a CPU profile or trace costs CPU while it
	// runs, so they are for an operator who asks for them.
	Pprof bool
	// AllowTrustRemote lets Auth "trust" serve a PGAddr that is not
	// loopback (--allow-trust-remote), for networks where every client
	// that can reach the address is trusted. Default false.
	AllowTrustRemote bool
	// RowCacheMB is the size in MiB of the row cache, which keeps the
	// stored rows that point reads (WHERE key = ...) returned in memory
	// (materialize.Options.RowCacheSize). Default DefaultRowCacheMB;
	// negative turns it off.
	RowCacheMB int
	// ScanCacheMB is the size in MiB of the scan cache, which keeps the
	// decoded rows of whole-partition scans of a view while the
	// partition is not written (materialize.Options.ScanCacheSize). It
	// needs the row cache. Default DefaultScanCacheMB; negative turns it
	// off.
	ScanCacheMB int
	// SchemaRegistry is the URL of the Confluent-compatible schema
	// registry of the registry formats (value_format 'avro'), or several
	// separated by commas (--schema-registry). Empty (the default): no
	// registry, and statements naming such a format are refused.
	SchemaRegistry string
	// SchemaRegistryUser and SchemaRegistryPassword are the registry's
	// HTTP basic authentication (--schema-registry-user; the password,
	// like cluster-secret, has no flag: config-file key
	// schema-registry-password or BASIN_SCHEMA_REGISTRY_PASSWORD).
	SchemaRegistryUser     string
	SchemaRegistryPassword string
	// SchemaRegistryCA is a PEM file with the CA certificate(s) an https
	// registry's certificate is verified against
	// (--schema-registry-ca); empty: the system's roots.
	SchemaRegistryCA string
	// SchemaRegistryCert and SchemaRegistryKey are a PEM client
	// certificate and its key for a registry that asks for one
	// (--schema-registry-cert, --schema-registry-key).
	SchemaRegistryCert string
	SchemaRegistryKey  string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultDataDir    = "./basin-data"
	DefaultPGAddr     = "127.0.0.1:5433"
	DefaultHTTPAddr   = "127.0.0.1:8433"
	DefaultBrokerAddr = "127.0.0.1:9092" // basin serve's; see Options.BrokerAddr
	DefaultCluster    = "basin"
	DefaultPartitions = 4

	DefaultStandbyReplicas       = 1
	DefaultAcceptableRecoveryLag = 10000
	DefaultMaxWarmups            = 2
	DefaultProbingInterval       = time.Minute
	DefaultSessionTimeout        = 6 * time.Second
	DefaultHeartbeatInterval     = 100 * time.Millisecond
	DefaultLagReportInterval     = time.Second
	DefaultRowCacheMB            = 64
	DefaultScanCacheMB           = 128
)

// ensureDefaults fills unset fields with their defaults; it is the one
// place defaults live.
func (o *Options) ensureDefaults() {
	if o.DataDir == "" {
		o.DataDir = DefaultDataDir
	}
	if o.PGAddr == "" {
		o.PGAddr = DefaultPGAddr
	}
	if o.HTTPAddr == "off" {
		o.HTTPAddr = ""
	}
	if o.BrokerAddr == "" {
		o.BrokerAddr = "127.0.0.1:0"
	}
	if o.Cluster == "" {
		o.Cluster = DefaultCluster
	}
	if o.DefaultPartitions == 0 {
		o.DefaultPartitions = DefaultPartitions
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = 100
	}
	// Zero is the default; a negative value is left for Validate to
	// refuse.
	if o.AcceptableRecoveryLag == 0 {
		o.AcceptableRecoveryLag = DefaultAcceptableRecoveryLag
	}
	if o.MaxWarmups == 0 {
		o.MaxWarmups = DefaultMaxWarmups
	}
	if o.ProbingInterval == 0 {
		o.ProbingInterval = DefaultProbingInterval
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.LagReportInterval == 0 {
		o.LagReportInterval = DefaultLagReportInterval
	}
	if o.RowCacheMB == 0 {
		o.RowCacheMB = DefaultRowCacheMB
	}
	if o.ScanCacheMB == 0 {
		o.ScanCacheMB = DefaultScanCacheMB
	}
	if o.Auth == "" {
		o.Auth = pgwire.AuthTrust.String()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Validate checks the options after defaults are filled.
func (o *Options) Validate() error {
	if o.DefaultPartitions < 1 || o.DefaultPartitions > 10000 {
		return fmt.Errorf("default partitions must be between 1 and 10000, not %d", o.DefaultPartitions)
	}
	for _, c := range o.Cluster {
		if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return fmt.Errorf("cluster name %q may hold only letters, digits, '.', '_' and '-'", o.Cluster)
		}
	}
	if o.MaxConnections < 1 {
		return errors.New("max connections must be at least 1")
	}
	for _, c := range []struct {
		flag string
		n    int64
	}{
		{"--standby-replicas", int64(o.StandbyReplicas)},
		{"--acceptable-recovery-lag", o.AcceptableRecoveryLag},
		{"--max-warmups", int64(o.MaxWarmups)},
	} {
		if c.n < 0 {
			return fmt.Errorf("%s = %d: give a number of at least 0", c.flag, c.n)
		}
	}
	for _, c := range []struct {
		flag string
		d    time.Duration
	}{
		{"--probing-interval", o.ProbingInterval},
		{"--session-timeout", o.SessionTimeout},
		{"--heartbeat-interval", o.HeartbeatInterval},
		{"--lag-report-interval", o.LagReportInterval},
	} {
		if c.d < 0 {
			return fmt.Errorf("%s = %v: give a positive duration, such as 500ms or 6s", c.flag, c.d)
		}
	}
	if err := o.validateRegistry(); err != nil {
		return err
	}
	return o.validateAuth()
}

// validateRegistry checks the schema registry settings.
func (o *Options) validateRegistry() error {
	if o.SchemaRegistry == "" {
		for _, s := range []struct{ flag, v string }{
			{"--schema-registry-user", o.SchemaRegistryUser}, {"--schema-registry-ca", o.SchemaRegistryCA},
			{"--schema-registry-cert", o.SchemaRegistryCert}, {"--schema-registry-key", o.SchemaRegistryKey},
		} {
			if s.v != "" {
				return fmt.Errorf("%s is a setting of the schema registry: give --schema-registry URL too", s.flag)
			}
		}
		return nil
	}
	_, err := o.registryOptions()
	return err
}

// registryOptions returns the serde options of the schema registry
// settings.
func (o *Options) registryOptions() (serde.RegistryOptions, error) {
	ro := serde.RegistryOptions{User: o.SchemaRegistryUser, Password: o.SchemaRegistryPassword}
	for _, u := range strings.Split(o.SchemaRegistry, ",") {
		u = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(u), "/"))
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return ro, fmt.Errorf("--schema-registry %q: give an http:// or https:// URL, such as http://localhost:8081", u)
		}
		if pu.User != nil {
			return ro, fmt.Errorf("--schema-registry %q: give the user in --schema-registry-user and the password in BASIN_SCHEMA_REGISTRY_PASSWORD, not in the URL (a command line is visible to every local user)", pu.Redacted())
		}
		ro.URLs = append(ro.URLs, u)
	}
	if o.SchemaRegistryPassword != "" && o.SchemaRegistryUser == "" {
		return ro, errors.New("schema-registry-password needs --schema-registry-user")
	}
	if (o.SchemaRegistryCert == "") != (o.SchemaRegistryKey == "") {
		return ro, errors.New("--schema-registry-cert and --schema-registry-key go together: give both files, or neither")
	}
	if o.SchemaRegistryCA == "" && o.SchemaRegistryCert == "" {
		return ro, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.SchemaRegistryCA != "" {
		pem, err := os.ReadFile(o.SchemaRegistryCA)
		if err != nil {
			return ro, fmt.Errorf("reading the schema registry's CA (--schema-registry-ca): %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return ro, fmt.Errorf("--schema-registry-ca %s holds no PEM certificate", o.SchemaRegistryCA)
		}
	}
	if o.SchemaRegistryCert != "" {
		cert, err := tls.LoadX509KeyPair(o.SchemaRegistryCert, o.SchemaRegistryKey)
		if err != nil {
			return ro, fmt.Errorf("--schema-registry-cert and --schema-registry-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	ro.TLS = cfg
	return ro, nil
}

// validateAuth checks the TLS and authentication settings together.
func (o *Options) validateAuth() error {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both files, or neither for no TLS")
	}
	if o.ClusterCA != "" {
		if o.TLSCert == "" {
			return errors.New("--cluster-ca verifies the TLS certificates of the other nodes, and needs TLS here too: give --tls-cert and --tls-key")
		}
		pem, err := os.ReadFile(o.ClusterCA)
		if err != nil {
			return fmt.Errorf("reading the cluster CA (--cluster-ca): %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return fmt.Errorf("--cluster-ca %s holds no PEM certificate", o.ClusterCA)
		}
	}
	if o.RequireTLS && o.TLSCert == "" {
		return errors.New("--require-tls refuses connections without TLS, so it needs TLS: give --tls-cert and --tls-key")
	}
	method, err := pgwire.ParseAuthMethod(o.Auth)
	if err != nil {
		return fmt.Errorf("--auth: %w", err)
	}
	switch method {
	case pgwire.AuthTrust:
		if !o.AllowTrustRemote {
			return checkTrustAddr(o.PGAddr)
		}
	case pgwire.AuthPassword:
		if o.TLSCert == "" {
			return errors.New("--auth password sends passwords in cleartext and is accepted only over TLS: " +
				"give --tls-cert and --tls-key, or use --auth scram")
		}
		fallthrough
	case pgwire.AuthSCRAM:
		if len(o.Users) == 0 {
			return fmt.Errorf("--auth %s needs users: add a users: map of name to password or SCRAM verifier "+
				"(from `basin passwd`) to the config file", method)
		}
		if len(o.Brokers) > 0 && o.ClusterSecret == "" {
			return fmt.Errorf("--auth %s with --brokers needs cluster-secret: the nodes of a cluster read from each other "+
				"as user %s with that password; set the same cluster-secret (config file) or BASIN_CLUSTER_SECRET on every node", method, ClusterUser)
		}
		if _, ok := o.Users[ClusterUser]; ok && o.ClusterSecret != "" {
			return fmt.Errorf("users: %s is the user nodes read from each other as (cluster-secret is its password); "+
				"remove it from users", ClusterUser)
		}
	}
	return nil
}

// ClusterUser is the user name nodes connect to each other as, with
// ClusterSecret as its password, when authentication is on.
const ClusterUser = "basin_cluster"

// nodeID returns the configured id, or the one kept in the data dir,
// creating it on first start.
func (o *Options) nodeID() (string, error) {
	if o.NodeID != "" {
		return o.NodeID, nil
	}
	path := filepath.Join(o.DataDir, "node-id")
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "node"
	}
	id := fmt.Sprintf("%s-%d", host, os.Getpid())
	if err := os.WriteFile(path, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return id, nil
}
