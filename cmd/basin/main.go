// Command basin runs a basin node (serve) or a standalone development
// Kafka broker (broker). It holds flags and subcommands only; node/ does
// the work.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

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
	root.AddCommand(newServe(), newBroker())
	return root
}

// settings binds a command's flags to BASIN_* environment variables and
// the config file: flag > environment > config file > default.
func settings(cmd *cobra.Command) (*viper.Viper, error) {
	v := viper.New()
	v.SetEnvPrefix("BASIN")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_", ".", "_"))
	v.AutomaticEnv()
	if err := v.BindPFlags(cmd.Flags()); err != nil {
		return nil, err
	}
	if path := v.GetString("config"); path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("reading config file %s: %w", path, err)
		}
	}
	return v, nil
}

func logger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

func newServe() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a basin node (with an embedded broker when --brokers is not given)",
		Args:  cobra.NoArgs,
	}
	f := cmd.Flags()
	f.String("data-dir", node.DefaultDataDir, "directory for the node's state (and the embedded broker's log)")
	f.String("pg-addr", node.DefaultPGAddr, "Postgres wire protocol listen address")
	f.String("http-addr", node.DefaultHTTPAddr, "HTTP address for /metrics, /healthz and cluster endpoints (\"off\" disables)")
	f.String("brokers", "", "Kafka seed brokers, host:port,...; empty starts an embedded broker")
	f.String("broker-addr", "127.0.0.1:0", "listen address of the embedded broker")
	f.String("node-id", "", "static node id (default: generated once and kept in the data dir)")
	f.String("cluster", node.DefaultCluster, "cluster name; nodes with the same name on the same Kafka share the work")
	f.Int("default-partitions", node.DefaultPartitions, "partitions of topics basin creates when a statement names none")
	f.Int("max-connections", 100, "maximum concurrent Postgres connections")
	f.String("log-level", "info", "log level: debug, info, warn, error")
	f.String("config", "", "config file (YAML, TOML or JSON) with the same keys as the flags")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v, err := settings(cmd)
		if err != nil {
			return err
		}
		log, err := logger(v.GetString("log-level"))
		if err != nil {
			return err
		}
		var brokers []string
		for _, b := range strings.Split(v.GetString("brokers"), ",") {
			if b = strings.TrimSpace(b); b != "" {
				brokers = append(brokers, b)
			}
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		n, err := node.Start(ctx, node.Options{
			DataDir:           v.GetString("data-dir"),
			PGAddr:            v.GetString("pg-addr"),
			HTTPAddr:          v.GetString("http-addr"),
			Brokers:           brokers,
			BrokerAddr:        v.GetString("broker-addr"),
			NodeID:            v.GetString("node-id"),
			Cluster:           v.GetString("cluster"),
			DefaultPartitions: v.GetInt("default-partitions"),
			MaxConnections:    v.GetInt("max-connections"),
			Logger:            log,
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "basin %s ready: psql -h %s -p %s -U basin basin\n", exec.Version, host(n.PGAddr()), port(n.PGAddr()))
		<-ctx.Done()
		log.Info("shutting down")
		return n.Close()
	}
	return cmd
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
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v, err := settings(cmd)
		if err != nil {
			return err
		}
		log, err := logger(v.GetString("log-level"))
		if err != nil {
			return err
		}
		b, err := kafka.StartBroker(kafka.BrokerOptions{Addr: v.GetString("addr"), DataDir: v.GetString("data-dir"), Logger: log})
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "basin broker listening on %s\n", strings.Join(b.Addrs(), ","))
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
