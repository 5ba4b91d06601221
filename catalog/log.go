package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/basindb/basin/kafka"
)

// ErrLogClosed is returned by Submit and Sync after Close.
var ErrLogClosed = errors.New("catalog: command log closed")

// ErrLogLost marks a command topic that no longer holds commands this
// node applied: its end fell below the last command applied, or the
// command at that offset is another one (the broker truncated a corrupt
// segment, an unclean leader election lost the tail, or the topic was
// deleted and created again). A catalog replayed from such a topic is a
// partial one; nothing may be started, dropped or deleted from it.
var ErrLogLost = errors.New("catalog: the command topic lost commands")

// ErrLogUnreadable is returned by Submit and Sync, and by OpenLog, while
// the replay has failed to fetch the topic for longer than
// fetchFailGrace: the catalog may be missing commands the broker has, so
// nothing that depends on it being complete may proceed. Unlike
// ErrLogLost it clears once fetches succeed again.
var ErrLogUnreadable = errors.New("catalog: the command topic cannot be read")

// ErrNotApplied is returned by Submit when the command it appended was
// not applied by this node: the offset the broker gave it holds another
// command when replayed, or is behind what the replay has applied.
var ErrNotApplied = errors.New("catalog: command not applied")

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
	// MarkFile is where the log records the offset and checksum of the
	// last command this node applied (a file of the node's data
	// directory). OpenLog then refuses a topic that no longer holds that
	// command (ErrLogLost). Empty: no record, no check.
	MarkFile string
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

	// markMu serializes writes of opts.MarkFile; marked is the offset
	// last written. It is not l.mu: writing is I/O.
	markMu sync.Mutex
	marked int64
	// verified is set once the startup replay reached the end of the
	// topic and agreed with the mark: only then is the mark advanced.
	verified bool // markMu must be held

	mu struct {
		sync.Mutex
		applied int64 // last offset applied, -1 before any
		// last is the last record applied (offset -1 before any): the
		// replay must only move forward from it.
		last    mark
		waiters []waiter
		err     error // set when replay stopped
		changes map[int64]applied
		// fetchWarned is when a fetch error was last logged, so that
		// an error the client retries forever does not flood the log.
		fetchWarned time.Time
		// failingSince is when fetches of the topic started failing
		// (zero while they succeed), fetchErr the last error.
		failingSince time.Time
		fetchErr     error
	}
}

// applied is the change of one command and the checksum of its record,
// which proves to Submit that the command at its offset is its own.
type applied struct {
	ch  Change
	sum uint32
}

// mark identifies the last command a node applied: its offset and the
// CRC-32C of its record value. It is what MarkFile holds.
type mark struct {
	Topic  string `json:"topic"`
	Offset int64  `json:"offset"`
	Sum    uint32 `json:"crc32c"`
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

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
		// Never reset to the start (which would apply old commands
		// again) or the end: a topic that moved under the replay is
		// reported, see replay.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
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
	want, err := readMark(opts.MarkFile, opts.Topic)
	if err != nil {
		cl.Close()
		return nil, err
	}
	if want != nil && want.Offset >= end {
		cl.Close()
		return nil, lostError(opts, *want, fmt.Sprintf("it ends at offset %d", end))
	}
	l := &Log{opts: opts, cat: cat, onChange: onChange, cl: cl, marked: -1}
	l.mu.applied = -1
	l.mu.last = mark{Topic: opts.Topic, Offset: -1}
	l.mu.changes = make(map[int64]applied)
	rctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.wg.Add(1)
	go l.replay(rctx, want)
	if err := l.waitApplied(ctx, end-1); err != nil {
		l.Close()
		if errors.Is(err, ErrLogLost) {
			return nil, err
		}
		return nil, fmt.Errorf("catalog: replaying %s: %w", opts.Topic, err)
	}
	// The replay reached the end the topic had and agreed with the mark:
	// from here on, the mark follows the replay.
	l.markMu.Lock()
	l.verified = true
	l.markMu.Unlock()
	l.writeMark()
	return l, nil
}

// lostError is the ErrLogLost error for a topic that no longer holds the
// command of m, saying what it holds instead (what) and the remedies. A
// client whose statement meets it sees XX001 (data_corrupted), short.
func lostError(opts LogOptions, m mark, what string) error {
	remedy := fmt.Sprintf("Restore the topic from a backup or a replica and start the node again; to accept the loss instead, "+
		"move %s aside and start: relations missing from the topic are then gone (create them again) and their state stays on disk unused.",
		opts.MarkFile)
	return &codedErr{
		msg: fmt.Sprintf("%v: this node applied the commands of %s up to offset %d (recorded in %s), but %s. "+
			"The broker may have truncated a corrupt log segment, a Kafka leader without the latest records may have taken over, "+
			"or the topic was deleted and created again. basin does not start on a partial catalog: its relations would vanish "+
			"and their state be deleted. %s",
			ErrLogLost, opts.Topic, m.Offset, opts.MarkFile, what, remedy),
		pe: pgerr.New(pgerr.DataCorrupted, "the catalog's command topic %s lost commands this node applied (up to offset %d, but %s); DDL is refused", opts.Topic, m.Offset, what).
			WithHint("%s See the node's log.", remedy),
	}
}

// codedErr is an error of this file (is is ErrLogLost when nil) with the
// SQLSTATE error a client sees.
type codedErr struct {
	msg string
	is  error
	pe  *pgerr.Error
}

func (e *codedErr) Error() string { return e.msg }
func (e *codedErr) Unwrap() []error {
	if e.is == nil {
		return []error{ErrLogLost, e.pe}
	}
	return []error{e.is, e.pe}
}

// unreadableErrorLocked is the ErrLogUnreadable error once fetches have
// failed for longer than fetchFailGrace, else nil. l.mu must be held.
func (l *Log) unreadableErrorLocked(now time.Time) error {
	since := l.mu.failingSince
	if since.IsZero() || now.Sub(since) < fetchFailGrace {
		return nil
	}
	return &codedErr{
		msg: fmt.Sprintf("%v: fetching %s after offset %d has failed for %s (%v); the catalog may miss commands the broker has, so DDL waits for it. "+
			"Check the broker; with the embedded broker a damaged log segment is a likely cause: see \"What basin does when data is bad\" in the operations guide",
			ErrLogUnreadable, l.opts.Topic, l.mu.last.Offset, now.Sub(since).Round(time.Second), l.mu.fetchErr),
		is: ErrLogUnreadable,
		pe: pgerr.New(pgerr.IOError, "the catalog's command topic %s cannot be read (%v); DDL is refused until it can", l.opts.Topic, l.mu.fetchErr).
			WithHint("Check the broker and the node's log."),
	}
}

// fetchFailGrace is how long the replay may fail to fetch before the
// calls waiting for it fail: a broker restarting or a leader moving is
// retried through, a topic that cannot be read is reported.
const fetchFailGrace = 5 * time.Second

// readMark reads the mark of topic from path; nil when there is none
// (a new node, a mark of another topic, or no path).
func readMark(path, topic string) (*mark, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: reading the command-topic mark %s: %w", path, err)
	}
	var m mark
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("catalog: the command-topic mark %s is damaged (%v); move it aside to start without the check that the topic lost no commands", path, err)
	}
	if m.Topic != topic || m.Offset < 0 {
		return nil, nil
	}
	return &m, nil
}

// writeMark records the last command applied in opts.MarkFile, once the
// startup replay is verified. A failure is logged: it only weakens the
// next start's check.
func (l *Log) writeMark() {
	if l.opts.MarkFile == "" {
		return
	}
	l.mu.Lock()
	m := l.mu.last
	l.mu.Unlock()
	l.markMu.Lock()
	defer l.markMu.Unlock()
	if !l.verified || m.Offset <= l.marked {
		return
	}
	if err := writeFileAtomic(l.opts.MarkFile, m); err != nil {
		l.opts.Logger.Error("recording the last catalog command applied", "file", l.opts.MarkFile, "err", err)
		return
	}
	l.marked = m.Offset
}

func writeFileAtomic(path string, m mark) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
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

// replay applies the topic's records in order until Close or until the
// topic proves to have lost commands (ErrLogLost), which stops it for
// good: Submit and Sync fail from then on, and nothing more is applied.
// want, when set, is the mark of the last command applied by an earlier
// run, which the topic must still hold.
func (l *Log) replay(ctx context.Context, want *mark) {
	defer l.wg.Done()
	for {
		fetches := l.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			l.stop(ErrLogClosed)
			return
		}
		var lost error
		failed := false
		fetches.EachError(func(t string, p int32, err error) {
			failed = true
			if errors.Is(err, kerr.OffsetOutOfRange) {
				// Below the replay's position: the topic was truncated
				// or recreated under it.
				l.mu.Lock()
				last := l.mu.last
				l.mu.Unlock()
				lost = lostError(l.opts, last, "the topic no longer has the offsets after it ("+err.Error()+")")
				return
			}
			l.warnFetch(t, err)
		})
		l.noteFetch(failed)
		if lost != nil {
			l.fail(lost)
			return
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if lost != nil {
				return
			}
			sum := crc32.Checksum(r.Value, crc32c)
			l.mu.Lock()
			last := l.mu.last
			l.mu.Unlock()
			if r.Offset <= last.Offset {
				lost = lostError(l.opts, last, fmt.Sprintf("the replay met offset %d again: the topic went back", r.Offset))
				return
			}
			if want != nil && r.Offset == want.Offset && sum != want.Sum {
				lost = lostError(l.opts, *want, fmt.Sprintf("the command now at offset %d is another one", r.Offset))
				return
			}
			if want != nil && r.Offset > want.Offset && last.Offset < want.Offset {
				lost = lostError(l.opts, *want, fmt.Sprintf("offset %d is missing", want.Offset))
				return
			}
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
			l.markApplied(ch, sum)
		})
		if lost != nil {
			l.fail(lost)
			return
		}
		l.writeMark()
		// A fetch that returned no records still tells us the end: a
		// transaction marker or an empty topic. Advance past control
		// records so waiters for the end offset wake up.
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			// A failed fetch carries no records but may carry the high
			// watermark: that is not the end reached.
			if p.Err == nil && len(p.Records) == 0 && p.HighWatermark > 0 {
				l.markEnd(p.HighWatermark - 1)
			}
		})
	}
}

// warnFetch logs a fetch error, at most once per fetchWarnEvery: the
// client retries it (a broker away, a topic being created), and every
// poll would log it again.
func (l *Log) warnFetch(topic string, err error) {
	l.mu.Lock()
	now := time.Now()
	quiet := now.Sub(l.mu.fetchWarned) < fetchWarnEvery
	if !quiet {
		l.mu.fetchWarned = now
	}
	l.mu.fetchErr = err
	l.mu.Unlock()
	if !quiet {
		l.opts.Logger.Warn("command topic fetch failed; retrying", "topic", topic, "err", err)
	}
}

// noteFetch records whether the last poll's fetch failed; a failure
// wakes the waiters, which give up once fetchFailGrace has passed.
func (l *Log) noteFetch(failed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !failed {
		l.mu.failingSince, l.mu.fetchErr = time.Time{}, nil
		return
	}
	if l.mu.failingSince.IsZero() {
		l.mu.failingSince = time.Now()
	}
	l.wakeAllLocked()
}

// wakeAllLocked wakes every waiter, to look at the log's state again.
// l.mu must be held.
func (l *Log) wakeAllLocked() {
	for _, w := range l.mu.waiters {
		close(w.ch)
	}
	l.mu.waiters = l.mu.waiters[:0]
}

// fetchWarnEvery bounds how often a repeated fetch error is logged.
const fetchWarnEvery = 10 * time.Second

// fail stops the replay for good with err, an ErrLogLost.
func (l *Log) fail(err error) {
	l.opts.Logger.Error("catalog replay stopped; DDL fails until the node is restarted on a complete command topic", "topic", l.opts.Topic, "err", err)
	l.stop(err)
}

func (l *Log) markApplied(ch Change, sum uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.last = mark{Topic: l.opts.Topic, Offset: ch.Offset, Sum: sum}
	// Submit collects the change of its own command right after it is
	// applied; changes nobody collects (other nodes' commands) are
	// dropped once far behind.
	l.mu.changes[ch.Offset] = applied{ch: ch, sum: sum}
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

// waitApplied waits until offset is applied, the replay stops, fetches
// have failed for fetchFailGrace, or ctx ends.
func (l *Log) waitApplied(ctx context.Context, offset int64) error {
	for {
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
		if err := l.unreadableErrorLocked(time.Now()); err != nil {
			l.mu.Unlock()
			return err
		}
		w := waiter{offset: offset, ch: make(chan struct{})}
		l.mu.waiters = append(l.mu.waiters, w)
		l.mu.Unlock()
		// Failures wake the waiters, but look again after the grace
		// even if none came (the client's retries back off).
		t := time.NewTimer(fetchFailGrace)
		select {
		case <-w.ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
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
	l.mu.Lock()
	last, stopped := l.mu.last, l.mu.err
	l.mu.Unlock()
	if stopped == nil && last.Offset >= end {
		// The topic ends before what was applied: it lost commands
		// while this node ran.
		err := lostError(l.opts, last, fmt.Sprintf("it ends at offset %d", end))
		l.fail(err)
		return err
	}
	return l.waitApplied(ctx, end-1)
}

// Submit appends cmd to the log and waits until this node has applied it.
// The returned Change says what happened; Change.Err is set when the
// command lost a race with another node's. Submit fails (ErrNotApplied)
// when the replay did not apply this very command at the offset the
// broker gave it, and with ErrLogLost once the replay has stopped on a
// topic that lost commands: a command is never reported done when it
// was not applied.
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
	a, ok := l.mu.changes[off]
	delete(l.mu.changes, off)
	if !ok || a.sum != crc32.Checksum(b, crc32c) || a.ch.Offset != off {
		return Change{}, fmt.Errorf("%w: the broker stored the command at offset %d of %s, but this node's replay of the topic, "+
			"at offset %d, did not apply it there; the topic may have been truncated or recreated: see the node's log, and retry once the node serves again",
			ErrNotApplied, off, l.opts.Topic, l.mu.last.Offset)
	}
	return a.ch, nil
}

// Close stops replay and releases the client.
func (l *Log) Close() {
	l.cancel()
	l.wg.Wait()
	l.cl.Close()
}
