package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/kafka"
)

// ErrLogClosed is returned by Submit and Sync after Close.
var ErrLogClosed = errors.New("catalog: command log closed")

// LogOptions configure a command log.
type LogOptions struct {
	// Brokers are the Kafka seed brokers. Required.
	Brokers []string
	// Topic is the single-partition command topic. Required.
	Topic string
	// Node names this node in the commands it submits.
	Node string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// ClientOpts are extra franz-go options (TLS, SASL).
	ClientOpts []kgo.Opt
}

// Log is the catalog's command topic: DDL is appended to it, and every
// node builds its catalog by replaying it in order. A restart replays the
// same log and so rebuilds the same catalog and restarts the same
// persistent queries.
type Log struct {
	opts     LogOptions
	cat      *Catalog
	onChange func(Change)
	cl       *kgo.Client
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu struct {
		sync.Mutex
		applied int64 // last offset applied, -1 before any
		waiters []waiter
		err     error // set when replay stopped
		changes map[int64]Change
	}
}

// maxUncollected bounds the applied changes kept for Submit to collect.
const maxUncollected = 1024

type waiter struct {
	offset int64
	ch     chan struct{}
}

// OpenLog creates the command topic when missing, replays it into cat up
// to its current end, calling onChange for each applied command in log
// order, and keeps replaying in the background until Close. onChange is
// called from one goroutine and must not call back into the Log.
func OpenLog(ctx context.Context, opts LogOptions, cat *Catalog, onChange func(Change)) (*Log, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if len(opts.Brokers) == 0 || opts.Topic == "" {
		return nil, errors.New("catalog: command log needs brokers and a topic")
	}
	kopts := append([]kgo.Opt{
		kgo.SeedBrokers(opts.Brokers...),
		kgo.ClientID("basin-catalog-" + opts.Node),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			opts.Topic: {0: kgo.NewOffset().AtStart()},
		}),
	}, opts.ClientOpts...)
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("catalog: command log client: %w", err)
	}
	if err := ensureCommandTopic(ctx, kadm.NewClient(cl), opts.Topic); err != nil {
		cl.Close()
		return nil, err
	}
	end, err := endOffset(ctx, kadm.NewClient(cl), opts.Topic)
	if err != nil {
		cl.Close()
		return nil, err
	}
	l := &Log{opts: opts, cat: cat, onChange: onChange, cl: cl}
	l.mu.applied = -1
	l.mu.changes = make(map[int64]Change)
	rctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.wg.Add(1)
	go l.replay(rctx)
	if err := l.waitApplied(ctx, end-1); err != nil {
		l.Close()
		return nil, fmt.Errorf("catalog: replaying %s: %w", opts.Topic, err)
	}
	return l, nil
}

func ensureCommandTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	// Commands are never deleted or compacted away: the log is the
	// catalog.
	retention := "-1"
	if _, _, err := kafka.EnsureTopic(ctx, adm, topic, 1, map[string]*string{"retention.ms": &retention}); err != nil {
		return fmt.Errorf("catalog: command topic %s: %w", topic, err)
	}
	return nil
}

func endOffset(ctx context.Context, adm *kadm.Client, topic string) (int64, error) {
	ends, err := kafka.EndOffsets(ctx, adm, topic)
	if err != nil {
		return 0, fmt.Errorf("catalog: %w", err)
	}
	return ends[0], nil
}

func (l *Log) replay(ctx context.Context) {
	defer l.wg.Done()
	for {
		fetches := l.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			l.stop(ErrLogClosed)
			return
		}
		fetches.EachError(func(t string, p int32, err error) {
			l.opts.Logger.Warn("command topic fetch failed", "topic", t, "err", err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			var ch Change
			cmd, err := DecodeCommand(r.Value)
			if err != nil {
				// A command this node cannot read is skipped everywhere
				// alike; the catalog must not diverge by crashing here.
				l.opts.Logger.Error("skipping undecodable catalog command", "offset", r.Offset, "err", err)
				ch = Change{Offset: r.Offset, Err: err}
			} else {
				ch = l.cat.Apply(r.Offset, cmd)
			}
			if l.onChange != nil {
				l.onChange(ch)
			}
			l.markApplied(ch)
		})
		// A fetch that returned no records still tells us the end: a
		// transaction marker or an empty topic. Advance past control
		// records so waiters for the end offset wake up.
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 && p.HighWatermark > 0 {
				l.markEnd(p.HighWatermark - 1)
			}
		})
	}
}

func (l *Log) markApplied(ch Change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Submit collects the change of its own command right after it is
	// applied; changes nobody collects (other nodes' commands) are
	// dropped once far behind.
	l.mu.changes[ch.Offset] = ch
	if len(l.mu.changes) > maxUncollected {
		for off := range l.mu.changes {
			if off < ch.Offset-maxUncollected {
				delete(l.mu.changes, off)
			}
		}
	}
	if ch.Offset > l.mu.applied {
		l.mu.applied = ch.Offset
	}
	l.wakeLocked()
}

func (l *Log) markEnd(off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if off > l.mu.applied {
		l.mu.applied = off
	}
	l.wakeLocked()
}

// wakeLocked wakes the waiters whose offset has been applied. l.mu must be
// held.
func (l *Log) wakeLocked() {
	kept := l.mu.waiters[:0]
	for _, w := range l.mu.waiters {
		if w.offset <= l.mu.applied || l.mu.err != nil {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	l.mu.waiters = kept
}

func (l *Log) stop(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.err = err
	l.wakeLocked()
}

func (l *Log) waitApplied(ctx context.Context, offset int64) error {
	l.mu.Lock()
	if l.mu.err != nil {
		err := l.mu.err
		l.mu.Unlock()
		return err
	}
	if offset <= l.mu.applied {
		l.mu.Unlock()
		return nil
	}
	w := waiter{offset: offset, ch: make(chan struct{})}
	l.mu.waiters = append(l.mu.waiters, w)
	l.mu.Unlock()
	select {
	case <-w.ch:
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.mu.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Sync waits until every command appended before the call has been
// applied, so that a statement validated afterwards sees the latest
// catalog (read-your-DDL across nodes).
func (l *Log) Sync(ctx context.Context) error {
	end, err := endOffset(ctx, kadm.NewClient(l.cl), l.opts.Topic)
	if err != nil {
		return err
	}
	return l.waitApplied(ctx, end-1)
}

// Submit appends cmd to the log and waits until this node has applied it.
// The returned Change says what happened; Change.Err is set when the
// command lost a race with another node's.
func (l *Log) Submit(ctx context.Context, cmd *Command) (Change, error) {
	cmd.Node = l.opts.Node
	b, err := EncodeCommand(cmd)
	if err != nil {
		return Change{}, err
	}
	rec := &kgo.Record{Topic: l.opts.Topic, Partition: 0, Value: b,
		Headers: []kgo.RecordHeader{{Key: "basin.command.version", Value: []byte(commandVersion)}}}
	res := l.cl.ProduceSync(ctx, rec)
	if err := res.FirstErr(); err != nil {
		return Change{}, fmt.Errorf("catalog: appending to %s: %w", l.opts.Topic, err)
	}
	off := rec.Offset
	if err := l.waitApplied(ctx, off); err != nil {
		return Change{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := l.mu.changes[off]
	delete(l.mu.changes, off)
	return ch, nil
}

// Close stops replay and releases the client.
func (l *Log) Close() {
	l.cancel()
	l.wg.Wait()
	l.cl.Close()
}
