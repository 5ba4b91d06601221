package node

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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
	// BrokerAddr is where the embedded broker listens. Default
	// "127.0.0.1:0" (any free port).
	BrokerAddr string
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
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultDataDir    = "./basin-data"
	DefaultPGAddr     = "127.0.0.1:5433"
	DefaultHTTPAddr   = "127.0.0.1:8433"
	DefaultCluster    = "basin"
	DefaultPartitions = 4
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
	return nil
}

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
