// Command basin runs a basin node (serve) or a standalone development
// Kafka broker (broker). It holds flags and subcommands only; node/ does
// the work, kafka/ runs the broker, and exec gives the version it prints.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
	"golang.org/x/term"

	"github.com/basindb/basin/exec"
	"github.com/basindb/basin/kafka"
	"github.com/basindb/basin/node"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "basin:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "basin",
		Short:         "basin: streaming materialized views over Kafka, read with Postgres SQL",
		Version:       exec.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServe(), newBroker(), newPasswd(), newVersion())
	return root
}

// newVersion is `basin version` (as `basin --version`, with the Go
// release and platform it was built with).
func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print basin's version and the Go version it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "basin %s (%s %s/%s)\n", exec.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}

func logger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// defaultBrokerAddr is the default of basin serve's --broker-addr; a
// variable so that a test can hold a port of its own instead of 9092.
var defaultBrokerAddr = node.DefaultBrokerAddr

func newServe() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a basin node (with an embedded broker when --brokers is not given)",
		Long: `serve runs a basin node: with --brokers, one node of a cluster on that Kafka;
without, alone on an embedded Kafka-compatible broker (--broker-addr).

Each setting is a flag, a BASIN_* environment variable or a key of the
config file (--config); the first set wins, in that order, then the default.
users, cluster-secret and schema-registry-password have no flag: they are
config-file keys or BASIN_USERS (a JSON object), BASIN_CLUSTER_SECRET and
BASIN_SCHEMA_REGISTRY_PASSWORD.`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.String("data-dir", node.DefaultDataDir, "directory for the node's state (and the embedded broker's log)")
	f.String("pg-addr", node.DefaultPGAddr, "Postgres wire protocol listen address")
	f.String("http-addr", node.DefaultHTTPAddr, "HTTP address for /metrics, /healthz and cluster endpoints (\"off\" disables)")
	f.String("brokers", "", "Kafka seed brokers, host:port,...; empty starts an embedded broker")
	f.String("broker-addr", defaultBrokerAddr, "listen address of the embedded broker; when the default's port is taken, a free port instead")
	f.String("node-id", "", "static node id (default: generated once and kept in the data dir)")
	f.String("cluster", node.DefaultCluster, "cluster name; nodes with the same name on the same Kafka share the work")
	f.Int("default-partitions", node.DefaultPartitions, "partitions of topics basin creates when a statement names none")
	f.Int("max-connections", 100, "maximum concurrent Postgres connections")
	f.Int("standby-replicas", node.DefaultStandbyReplicas, "standby replicas of each task when a view's num.standby.replicas is not set")
	f.Int64("acceptable-recovery-lag", node.DefaultAcceptableRecoveryLag, "changelog records a node may be behind for a task to move to it (else it warms up first)")
	f.Int("max-warmups", node.DefaultMaxWarmups, "warm-up replicas in the cluster at a time")
	f.Duration("probing-interval", node.DefaultProbingInterval, "how often the group leader rebalances while warm-ups catch up")
	f.Duration("session-timeout", node.DefaultSessionTimeout, "how long a silent node keeps its tasks (failover time; restart window of a static member)")
	f.Duration("heartbeat-interval", node.DefaultHeartbeatInterval, "how often a node sends heartbeats to the others (down after 5 missed)")
	f.Duration("lag-report-interval", node.DefaultLagReportInterval, "how often a node sends its tasks' lags to the others")
	f.Int("row-cache-mb", node.DefaultRowCacheMB, "MiB of memory for the rows point reads returned, served again without a storage read (0 turns it off)")
	f.Int("scan-cache-mb", node.DefaultScanCacheMB, "MiB of memory for the decoded rows of view partitions that queries scanned whole, served again while the partition is unchanged (0 turns it off; needs the row cache)")
	f.String("tls-cert", "", "PEM file with the Postgres server's TLS certificate chain (with --tls-key)")
	f.String("tls-key", "", "PEM file with the private key of --tls-cert")
	f.String("cluster-ca", "", "PEM file with the CA that signs the nodes' TLS certificates; peers' certificates are verified against it (needs --tls-cert)")
	f.Bool("require-tls", false, "refuse Postgres connections without TLS (needs --tls-cert)")
	f.String("auth", "trust", "Postgres authentication: trust (loopback only), scram, or password (cleartext, TLS only); "+
		"users come from the config file's users: map")
	f.Bool("allow-trust-remote", false, "allow --auth trust on a --pg-addr that is not loopback")
	f.String("schema-registry", "", "URL of the Confluent-compatible schema registry of value_format 'avro' (several: comma-separated)")
	f.String("schema-registry-user", "", "user of the schema registry's basic authentication (the password: BASIN_SCHEMA_REGISTRY_PASSWORD)")
	f.String("schema-registry-ca", "", "PEM file with the CA an https schema registry's certificate is verified against (default: the system's)")
	f.String("schema-registry-cert", "", "PEM client certificate for a schema registry that asks for one (with --schema-registry-key)")
	f.String("schema-registry-key", "", "PEM private key of --schema-registry-cert")
	f.Bool("pprof", false, "serve Go's profiles under /debug/pprof/ on --http-addr")
	f.String("log-level", "info", "log level: debug, info, warn, error")
	f.String("config", "", "config file (YAML, TOML or JSON) with the same keys as the flags")
	describeSettings(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v, err := settings(cmd)
		if err != nil {
			return err
		}
		stderr := cmd.ErrOrStderr()
		log, err := logger(v.GetString("log-level"), stderr)
		if err != nil {
			return err
		}
		raiseFileLimit(log)
		if os.Getenv("GOGC") == "" {
			// Reads allocate short-lived rows at a high rate over a small
			// live heap: the default (100) collects several times a second
			// under load and returns memory to the OS only to fault it
			// back in. GOGC in the environment overrides this.
			debug.SetGCPercent(serveGCPercent)
		}
		if os.Getenv("GOMAXPROCS") == "" {
			// Twice as many Ps as the runtime's default (the CPUs it may
			// use): when the kernel deschedules a thread running a P in
			// favour of another process (a client on the same machine, the
			// broker), the goroutines queued on that P wait for it to run
			// again; with more Ps, other threads take them. Under B1's
			// load this halves the p99 latency of point lookups. Once
			// per process: tests run serve many times in one.
			doubleProcs.Do(func() { runtime.GOMAXPROCS(2 * runtime.GOMAXPROCS(0)) })
		}
		users, err := usersSetting(v)
		if err != nil {
			return err
		}
		rowCacheMB := v.GetInt("row-cache-mb")
		switch {
		case rowCacheMB < 0:
			return fmt.Errorf("row-cache-mb = %d: give a size in MiB, or 0 to turn the row cache off", rowCacheMB)
		case rowCacheMB == 0:
			rowCacheMB = -1 // node.Options: off
		}
		scanCacheMB := v.GetInt("scan-cache-mb")
		switch {
		case scanCacheMB < 0:
			return fmt.Errorf("scan-cache-mb = %d: give a size in MiB, or 0 to turn the scan cache off", scanCacheMB)
		case scanCacheMB == 0:
			scanCacheMB = -1 // node.Options: off
		}
		var brokers []string // a string host:port,... or a config file's list
		for _, bs := range v.GetStringSlice("brokers") {
			for _, b := range strings.Split(bs, ",") {
				if b = strings.TrimSpace(b); b != "" {
					brokers = append(brokers, b)
				}
			}
		}
		brokerAddr := v.GetString("broker-addr")
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		n, err := node.Start(ctx, node.Options{
			DataDir:                v.GetString("data-dir"),
			PGAddr:                 v.GetString("pg-addr"),
			HTTPAddr:               v.GetString("http-addr"),
			Brokers:                brokers,
			BrokerAddr:             brokerAddr,
			BrokerAddrFallback:     !isSet(cmd, v, "broker-addr"),
			NodeID:                 v.GetString("node-id"),
			Cluster:                v.GetString("cluster"),
			DefaultPartitions:      v.GetInt("default-partitions"),
			MaxConnections:         v.GetInt("max-connections"),
			StandbyReplicas:        v.GetInt("standby-replicas"),
			AcceptableRecoveryLag:  v.GetInt64("acceptable-recovery-lag"),
			MaxWarmups:             v.GetInt("max-warmups"),
			ProbingInterval:        v.GetDuration("probing-interval"),
			SessionTimeout:         v.GetDuration("session-timeout"),
			HeartbeatInterval:      v.GetDuration("heartbeat-interval"),
			LagReportInterval:      v.GetDuration("lag-report-interval"),
			RowCacheMB:             rowCacheMB,
			ScanCacheMB:            scanCacheMB,
			TLSCert:                v.GetString("tls-cert"),
			TLSKey:                 v.GetString("tls-key"),
			ClusterCA:              v.GetString("cluster-ca"),
			RequireTLS:             v.GetBool("require-tls"),
			Auth:                   v.GetString("auth"),
			Users:                  users,
			ClusterSecret:          v.GetString("cluster-secret"),
			AllowTrustRemote:       v.GetBool("allow-trust-remote"),
			Pprof:                  v.GetBool("pprof"),
			SchemaRegistry:         v.GetString("schema-registry"),
			SchemaRegistryUser:     v.GetString("schema-registry-user"),
			SchemaRegistryPassword: v.GetString("schema-registry-password"),
			SchemaRegistryCA:       v.GetString("schema-registry-ca"),
			SchemaRegistryCert:     v.GetString("schema-registry-cert"),
			SchemaRegistryKey:      v.GetString("schema-registry-key"),
			Logger:                 log,
		})
		if err != nil {
			return err
		}
		user := "basin" // any name does under trust
		if v.GetString("auth") != "trust" {
			user = "<user>"
		}
		fmt.Fprintln(stderr, settingsLine(n))
		fmt.Fprintf(stderr, "basin %s ready: psql -h %s -p %s -U %s basin\n", exec.Version, host(n.PGAddr()), port(n.PGAddr()), user)
		<-ctx.Done()
		log.Info("shutting down")
		return n.Close()
	}
	return cmd
}

// isSet reports whether a flag's setting was given: on the command line,
// in the environment or in the config file.
func isSet(cmd *cobra.Command, v *viper.Viper, key string) bool {
	return cmd.Flags().Changed(key) || os.Getenv(envName(key)) != "" || v.InConfig(key)
}

// settingsLine states the settings a node runs with, for the line before
// the ready line: where its state is, where to reach it and its Kafka,
// and the settings whose defaults a user most often needs to know.
func settingsLine(n *node.Node) string {
	o := n.Options()
	dir := o.DataDir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	httpAddr := n.HTTPAddr()
	if httpAddr == "" {
		httpAddr = "off"
	}
	kafkaAt := "brokers " + strings.Join(n.Brokers(), ",")
	if addr := n.BrokerAddr(); addr != "" {
		kafkaAt = "broker-addr " + addr + " (embedded broker: Kafka producers and consumers connect here"
		if o.BrokerAddrFallback && addr != o.BrokerAddr {
			kafkaAt += "; " + o.BrokerAddr + " was taken"
		}
		kafkaAt += ")"
	}
	return fmt.Sprintf("basin settings: data-dir %s, pg-addr %s, http-addr %s, %s, default-partitions %d, auth %s, "+
		"session-timeout %s, heartbeat-interval %s",
		dir, n.PGAddr(), httpAddr, kafkaAt, o.DefaultPartitions, o.Auth, o.SessionTimeout, o.HeartbeatInterval)
}

// usersSetting returns the users setting: BASIN_USERS (a JSON object)
// over the config file's users map, name to password or SCRAM verifier.
// It is read here rather than through viper because viper folds keys
// to lower case, and user names are case-sensitive ("Alice" is not
// "alice", in Postgres as here). It has no flag: passwords on a command
// line are visible to every local user.
func usersSetting(v *viper.Viper) (map[string]string, error) {
	if s, ok := os.LookupEnv("BASIN_USERS"); ok {
		var users map[string]string
		if err := json.Unmarshal([]byte(s), &users); err != nil {
			return nil, fmt.Errorf("BASIN_USERS must be a JSON object of user name to password or SCRAM verifier: %w", err)
		}
		return users, nil
	}
	path := v.ConfigFileUsed()
	if path == "" || !v.IsSet("users") {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config file %s: %w", path, err)
	}
	var doc struct {
		Users map[string]any `json:"users" yaml:"users" toml:"users"`
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml":
		err = yaml.Unmarshal(data, &doc)
	case ".toml":
		err = toml.Unmarshal(data, &doc)
	case ".json":
		err = json.Unmarshal(data, &doc)
	default:
		return nil, fmt.Errorf("config file %s: users can be read from a .yaml, .yml, .toml or .json file only", path)
	}
	if err != nil {
		return nil, fmt.Errorf("config file %s: users: %w", path, err)
	}
	users := make(map[string]string, len(doc.Users))
	for name, secret := range doc.Users {
		s, ok := secret.(string)
		if !ok {
			// An unquoted all-digit password would lose leading zeros on
			// the way; better to ask for quotes.
			return nil, fmt.Errorf("config file %s: users: the value for %q must be a string (a password or a SCRAM verifier); "+
				"quote it", path, name)
		}
		users[name] = s
	}
	return users, nil
}

// newPasswd is `basin passwd`: it prints the SCRAM-SHA-256 verifier of a
// password, for the users: map of the config file, so the file need not
// hold the password itself.
func newPasswd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "passwd",
		Short: "Print a SCRAM-SHA-256 verifier for a password read from standard input",
		Long: `passwd reads a password from standard input (asking twice, without echo, on a
terminal; else the first line) and prints its SCRAM-SHA-256 verifier, in the
form PostgreSQL stores, for the users: map of the config file:

    users:
      alice: SCRAM-SHA-256$4096:...

Each run uses a fresh random salt, so the same password gives a different
verifier every time; any of them works.`,
		Args: cobra.NoArgs,
	}
	iters := cmd.Flags().Int("iterations", node.DefaultSCRAMIterations, "PBKDF2 iteration count")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		password, err := readPassword(cmd.InOrStdin(), cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		verifier, err := node.NewVerifier(password, *iters)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), verifier)
		return err
	}
	return cmd
}

// readPassword reads a password: from a terminal twice without echo,
// otherwise the first line of in.
func readPassword(in io.Reader, prompt io.Writer) (string, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(prompt, "Password: ")
		p1, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return "", err
		}
		fmt.Fprint(prompt, "Again: ")
		p2, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return "", err
		}
		if string(p1) != string(p2) {
			return "", errors.New("the passwords differ")
		}
		return string(p1), nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", errors.New("no password on standard input")
	}
	return line, nil
}

func newBroker() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run a standalone Kafka-compatible development broker",
		Args:  cobra.NoArgs,
	}
	f := cmd.Flags()
	f.String("addr", "127.0.0.1:9092", "listen address")
	f.String("data-dir", "", "directory for the broker's log (empty: in memory)")
	f.String("log-level", "info", "log level: debug, info, warn, error")
	f.String("config", "", "config file with the same keys as the flags")
	describeSettings(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v, err := settings(cmd)
		if err != nil {
			return err
		}
		log, err := logger(v.GetString("log-level"), cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		raiseFileLimit(log)
		b, err := kafka.StartBroker(kafka.BrokerOptions{Addr: v.GetString("addr"), DataDir: v.GetString("data-dir"), Logger: log})
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "basin broker listening on %s\n", strings.Join(b.Addrs(), ","))
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		<-ctx.Done()
		return errors.Join(b.Close())
	}
	return cmd
}

func host(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return addr[:i]
	}
	return addr
}

func port(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return addr[i+1:]
	}
	return ""
}

// doubleProcs doubles GOMAXPROCS for basin serve, once.
var doubleProcs sync.Once

// serveGCPercent is the Go collector's GOGC of basin serve unless the
// environment sets one (docs/operations.md).
const serveGCPercent = 200
