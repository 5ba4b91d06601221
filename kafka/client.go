package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/backoff"
)

// ClientOptions are the settings basin gives every franz-go client.
type ClientOptions struct {
	// Brokers are the seed brokers, host:port. Required.
	Brokers []string
	// ClientID names the client in broker logs and quotas. Default
	// "basin".
	ClientID string
	// Logger receives the client's warnings and errors. Default
	// slog.Default().
	Logger *slog.Logger
}

// NewClient returns a franz-go client with basin's defaults, then extra
// options, which may override them. Producers add ProducerOpts and
// consumers ConsumerOpts. The client connects lazily; use WaitReady to
// wait for the brokers.
func NewClient(opts ClientOptions, extra ...kgo.Opt) (*kgo.Client, error) {
	if len(opts.Brokers) == 0 {
		return nil, errors.New("kafka: new client: no brokers given")
	}
	if opts.ClientID == "" {
		opts.ClientID = "basin"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	kopts := []kgo.Opt{
		kgo.SeedBrokers(opts.Brokers...),
		kgo.ClientID(opts.ClientID),
		kgo.WithLogger(kgoLogger{opts.Logger.With("component", "kafka-client", "client_id", opts.ClientID)}),
	}
	cl, err := kgo.NewClient(append(kopts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: new client: %w", err)
	}
	return cl, nil
}

// ProducerOpts are the options of every basin producer. Partitioning is
// manual: basin sets Record.Partition itself with Partition, because it
// must know where a key lives before producing (to route reads, to keep a
// changelog partition aligned with its source partition), and a client
// partitioner would hide that decision.
func ProducerOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
}

// ConsumerOpts are the options of every basin consumer: read_committed, so
// that records of aborted or still open transactions are never seen.
func ConsumerOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	}
}

// WaitReady blocks until a broker answers a metadata request or ctx is
// done, retrying with backoff. It returns the last broker error along
// with the context's.
func WaitReady(ctx context.Context, cl *kgo.Client) error {
	b := backoff.New(20*time.Millisecond, time.Second)
	for {
		err := cl.Ping(ctx)
		if err == nil {
			return nil
		}
		if werr := b.Wait(ctx); werr != nil {
			return fmt.Errorf("kafka: brokers not ready: %w (last error: %v)", werr, err)
		}
	}
}

// kgoLogger adapts slog to kgo's logger at warn level: kgo's info logs
// describe every connection and metadata refresh.
type kgoLogger struct{ l *slog.Logger }

func (kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var sl slog.Level
	switch level {
	case kgo.LogLevelError:
		sl = slog.LevelError
	case kgo.LogLevelWarn:
		sl = slog.LevelWarn
	case kgo.LogLevelInfo:
		sl = slog.LevelInfo
	default:
		sl = slog.LevelDebug
	}
	k.l.Log(context.Background(), sl, msg, keyvals...)
}
