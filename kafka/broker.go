package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/basindb/basin/internal/backoff"
	"github.com/basindb/basin/internal/connlimit"
	"github.com/twmb/franz-go/pkg/kfake"
)

// ErrDataDirLocked is returned by StartBroker when another broker (in this
// process or another one) already uses the data dir.
var ErrDataDirLocked = errors.New("kafka: broker data dir is in use")

// lockFileName is the file in DataDir that a running broker holds locked.
const lockFileName = "basin-broker.lock"

// BrokerOptions configures the embedded broker. The zero value, apart
// from DataDir, is a loopback broker on a free port.
type BrokerOptions struct {
	// Addr is the host:port to listen on. Port 0 picks a free port (read
	// it back with Broker.Addrs). Default "127.0.0.1:0".
	Addr string

	// AdvertisedHost is the host the broker tells clients to connect to
	// in metadata responses. Default: the host of Addr, or 127.0.0.1 when
	// Addr's host is empty or unspecified (0.0.0.0, ::). Set it when
	// clients on other machines connect to a broker listening on all
	// interfaces.
	AdvertisedHost string

	// DataDir is the directory holding the log segments and the broker's
	// state (topics, producer ids, group offsets). It is created if
	// missing and locked while the broker runs. Empty keeps everything in
	// memory, which only tests should do: nothing survives Close.
	DataDir string

	// SyncWrites fsyncs every produced batch before acknowledging it.
	// Default false, like Kafka's own default: an acknowledged batch is in
	// the OS page cache, so it survives the process being killed
	// (SIGKILL, a crash) but not the machine losing power.
	SyncWrites bool

	// ClusterID is the cluster id reported in metadata. It is persisted
	// on first start; later starts keep the persisted one. Default
	// "basin".
	ClusterID string

	// GroupMinSessionTimeout and GroupMaxSessionTimeout bound the session
	// timeouts group members may ask for. Defaults 500ms and 30m: lower
	// than Kafka's 6s minimum so tests can fail over quickly, and Kafka's
	// 30m maximum so static members can ride out long restarts.
	GroupMinSessionTimeout time.Duration
	GroupMaxSessionTimeout time.Duration

	// MaxConnections bounds the client connections open at once, and
	// MaxConnectionsPerHost those from one remote IP address other than
	// the broker's own (connections from the broker's address, the
	// node's own clients among them, count towards MaxConnections only).
	// A connection past either is closed as soon as it is accepted, and
	// the broker logs "too many open connections" at most every 10 s
	// with the count. They keep a flood of connections that never send
	// a request from using up the process's file descriptors, which the
	// broker's log segments, the node's stores and its other ports need
	// too. Defaults: a quarter of the process's descriptor limit
	// (RLIMIT_NOFILE; DefaultMaxConnections when it is unknown), and
	// half of MaxConnections: a basin node opens about 5 connections per
	// task (a Kafka client each, with connections for produce, fetch and
	// the group), so one with hundreds of tasks opens thousands.
	MaxConnections        int
	MaxConnectionsPerHost int

	// Logger receives the broker's warnings and errors; its requests are
	// logged at debug level. Default slog.Default().
	Logger *slog.Logger
}

// DefaultMaxConnections is BrokerOptions.MaxConnections's default when
// the process's descriptor limit is unknown.
const DefaultMaxConnections = 4096

// Validate checks o and fills in defaults.
func (o *BrokerOptions) Validate() error {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	host, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return fmt.Errorf("kafka: broker address %q: want host:port: %w", o.Addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("kafka: broker address %q: port %q is not a number in 0..65535", o.Addr, port)
	}
	if o.AdvertisedHost == "" {
		o.AdvertisedHost = host
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			o.AdvertisedHost = "127.0.0.1"
		}
	}
	if o.ClusterID == "" {
		o.ClusterID = "basin"
	}
	if o.GroupMinSessionTimeout == 0 {
		o.GroupMinSessionTimeout = 500 * time.Millisecond
	}
	if o.GroupMaxSessionTimeout == 0 {
		o.GroupMaxSessionTimeout = 30 * time.Minute
	}
	if o.GroupMinSessionTimeout > o.GroupMaxSessionTimeout {
		return fmt.Errorf("kafka: group session timeout bounds: minimum %v exceeds maximum %v",
			o.GroupMinSessionTimeout, o.GroupMaxSessionTimeout)
	}
	if o.MaxConnections < 0 || o.MaxConnectionsPerHost < 0 {
		return fmt.Errorf("kafka: broker connection limits %d in total and %d per host: must be positive, or 0 for the default",
			o.MaxConnections, o.MaxConnectionsPerHost)
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections
		if limit := connlimit.FileLimit(); limit > 0 {
			o.MaxConnections = max(1, limit/4)
		}
	}
	if o.MaxConnectionsPerHost == 0 {
		o.MaxConnectionsPerHost = max(1, o.MaxConnections/2)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// Broker is a running embedded broker: a single-node Kafka-compatible
// cluster (franz-go's kfake) persisting to BrokerOptions.DataDir.
type Broker struct {
	cluster *kfake.Cluster
	lock    *os.File // nil without a DataDir
	dataDir string
	addrs   []string
	logger  *slog.Logger
	klog    *kfakeLogger
	// ln is the listener kfake accepts on (nil until NewCluster has
	// called ListenFn); Health asks it. It accepts from limited, which
	// caps the open connections.
	ln      atomic.Pointer[retryListener]
	limited atomic.Pointer[connlimit.Listener]

	// sessions keeps group members waiting for an answer in the group,
	// and ends the sessions of members that died in a join (see
	// sessionKeeper), until stopSessions.
	sessions     *sessionKeeper
	stopSessions context.CancelFunc
	sessionsDone chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// StartBroker starts an embedded broker, recovering the state persisted in
// opts.DataDir by an earlier broker, whether that one was closed or killed.
// Transactions that were open when a broker was killed are aborted on
// recovery (see recover.go), so read_committed consumers never see their
// records; transactions open at a clean Close stay open until their
// producer comes back and aborts them, as in Kafka.
func StartBroker(opts BrokerOptions) (*Broker, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	b := &Broker{
		logger:  opts.Logger.With("component", "broker"),
		dataDir: opts.DataDir,
	}
	b.klog = &kfakeLogger{l: b.logger}
	kopts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ClusterID(opts.ClusterID),
		kfake.GroupMinSessionTimeout(opts.GroupMinSessionTimeout),
		kfake.GroupMaxSessionTimeout(opts.GroupMaxSessionTimeout),
		kfake.WithLogger(b.klog),
	}
	if opts.DataDir != "" {
		lock, err := lockDataDir(opts.DataDir)
		if err != nil {
			return nil, err
		}
		b.lock = lock
		kopts = append(kopts, kfake.DataDir(opts.DataDir))
		if opts.SyncWrites {
			kopts = append(kopts, kfake.SyncWrites())
		}
		if err := b.recover(kopts); err != nil {
			b.unlock()
			return nil, fmt.Errorf("kafka: start broker with data dir %s: %w", opts.DataDir, err)
		}
	}

	// kfake asks for 127.0.0.1:<port>; we listen where we were told and
	// advertise AdvertisedHost with the port actually bound.
	kopts = append(kopts, kfake.ListenFn(func(network, _ string) (net.Listener, error) {
		ln, err := net.Listen(network, opts.Addr)
		if err != nil {
			return nil, fmt.Errorf("kafka: broker listen on %s: %w", opts.Addr, err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		limited := connlimit.NewListener(ln, connlimit.Options{
			Max:            opts.MaxConnections,
			MaxPerHost:     opts.MaxConnectionsPerHost,
			SameHostExempt: true,
			Name:           "broker",
			Logger:         b.logger,
		})
		b.limited.Store(limited)
		rl := &retryListener{
			Listener: limited,
			addr:     advertisedAddr(net.JoinHostPort(opts.AdvertisedHost, port)),
			log:      b.logger,
		}
		b.ln.Store(rl)
		return rl, nil
	}))
	c, err := kfake.NewCluster(kopts...)
	if err != nil {
		b.unlock()
		if opts.DataDir != "" {
			return nil, fmt.Errorf("kafka: start broker with data dir %s: %w", opts.DataDir, err)
		}
		return nil, fmt.Errorf("kafka: start broker: %w", err)
	}
	b.cluster = c
	b.addrs = c.ListenAddrs()
	if b.sessions, err = newSessionKeeper(c, b.addrs, b.logger); err != nil {
		c.Close()
		b.unlock()
		return nil, fmt.Errorf("kafka: start broker: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.stopSessions = cancel
	b.sessionsDone = make(chan struct{})
	go func() {
		defer close(b.sessionsDone)
		b.sessions.run(ctx, sessionCheckInterval)
	}()
	b.logger.Info("broker started", "addrs", b.addrs, "data_dir", opts.DataDir)
	return b, nil
}

// recover prepares the data dir after an unclean shutdown: it aborts the
// transactions the dead broker left open.
func (b *Broker) recover(kopts []kfake.Opt) error {
	clean, err := takeCleanMarker(b.dataDir)
	if err != nil || clean || !hasState(b.dataDir) {
		return err
	}
	txns, err := scanOpenTxns(b.dataDir)
	if err != nil {
		return fmt.Errorf("scan for transactions open at the last shutdown: %w", err)
	}
	b.logger.Warn("broker was not shut down cleanly; recovering", "data_dir", b.dataDir, "open_transactions", len(txns))
	if len(txns) == 0 {
		return nil
	}
	if err := abortOpenTxns(txns, kopts); err != nil {
		return fmt.Errorf("abort transactions open at the last shutdown: %w", err)
	}
	return nil
}

// Addrs returns the host:port clients should use as seed brokers.
func (b *Broker) Addrs() []string {
	return append([]string(nil), b.addrs...)
}

// Cluster returns the underlying kfake cluster, for tests that inject
// faults or move partitions.
func (b *Broker) Cluster() *kfake.Cluster { return b.cluster }

// Health reports why the broker cannot take new connections: accepting
// fails (most often the process is out of file descriptors), or its
// listener stopped before Close. It is nil while the broker accepts.
func (b *Broker) Health() error {
	ln := b.ln.Load()
	if ln == nil {
		return errors.New("kafka: the broker has no listener")
	}
	return ln.health()
}

// openConns returns the client connections the broker holds open and a
// channel closed when that number next changes.
func (b *Broker) openConns() (int, <-chan struct{}) {
	return b.limited.Load().Open()
}

// DiskFullSince returns the latest error the broker met writing its log
// or state for lack of space (ENOSPC, EDQUOT; its path names the file),
// if it met one at or after since, and nil otherwise. kfake answers a
// produce it could not write with UNKNOWN_SERVER_ERROR and only logs
// why, so an INSERT that failed asks here whether the disk is the cause.
func (b *Broker) DiskFullSince(since time.Time) error {
	df := b.klog.diskFull.Load()
	if df == nil || df.at.Before(since) {
		return nil
	}
	return df.err
}

// Close stops the broker: it stops accepting connections, writes its
// state to the data dir and releases the data dir. Close is idempotent.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.stopSessions()
		<-b.sessionsDone
		b.sessions.close()
		errsBefore := b.klog.errors.Load()
		b.cluster.Close()
		var markErr error
		if b.dataDir != "" {
			// kfake only logs a failure to save its state; if it did, the
			// next start must recover as from a crash.
			if b.klog.errors.Load() == errsBefore {
				if err := putCleanMarker(b.dataDir); err != nil {
					markErr = fmt.Errorf("kafka: record clean broker shutdown: %w", err)
				}
			} else {
				b.logger.Error("broker state may not be fully saved; the next start recovers as after a crash", "data_dir", b.dataDir)
			}
		}
		b.closeErr = errors.Join(markErr, b.unlock())
		b.logger.Info("broker stopped", "addrs", b.addrs)
	})
	return b.closeErr
}

func (b *Broker) unlock() error {
	if b.lock == nil {
		return nil
	}
	err := b.lock.Close() // closing the descriptor releases the lock
	b.lock = nil
	if err != nil {
		return fmt.Errorf("kafka: release broker data dir lock: %w", err)
	}
	return nil
}

// sessionCheckInterval is how often the broker looks for group members
// whose session should have timed out, and for members waiting for an
// answer that need a heartbeat (sessionKeeper): well under a third of the
// shortest session timeout allowed by default (500 ms).
const sessionCheckInterval = 100 * time.Millisecond

// lockDataDir creates dir if needed and takes an exclusive lock on a file
// in it, so that two brokers never write the same log. The lock is an OS
// advisory lock: it is released when the process dies, so a killed
// broker never leaves a stale lock behind.
func lockDataDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kafka: create broker data dir: %w", err)
	}
	path := dir + string(os.PathSeparator) + lockFileName
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kafka: open broker data dir lock: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%w: %s is locked by another running broker; stop it or use another data dir",
				ErrDataDirLocked, path)
		}
		return nil, fmt.Errorf("kafka: lock broker data dir %s: %w", dir, err)
	}
	// The pid is only a debugging aid for whoever finds the lock held.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// retryListener is the listener kfake accepts on. kfake's accept loop
// returns for good on any Accept error, so a moment out of file
// descriptors (EMFILE, ENFILE: a flood of connections to any of the
// node's ports) would stop the broker taking connections until restart.
// Accept therefore retries every error but a closed listener, with
// backoff, as net/http does; the pending connection stays in the
// kernel's backlog meanwhile. It reports addr as its address: kfake
// advertises its listener's address to clients in metadata responses.
type retryListener struct {
	net.Listener
	addr net.Addr
	log  *slog.Logger

	closed atomic.Bool
	// failing is the latest failed Accept while Accept keeps failing,
	// nil once one succeeds; stopped is set when Accept returned an
	// error to kfake, which then accepts no more.
	failing atomic.Pointer[acceptFailure]
	stopped atomic.Pointer[error]
}

func (l *retryListener) Addr() net.Addr { return l.addr }

func (l *retryListener) Close() error {
	l.closed.Store(true)
	return l.Listener.Close()
}

// maxAcceptBackoff bounds the wait between two failed Accepts.
const maxAcceptBackoff = time.Second

// acceptFailure is a failed Accept and when it failed.
type acceptFailure struct {
	err error
	at  time.Time
}

// acceptFailureFresh is how long health reports a failed Accept. A
// failure that lasts (EMFILE, with the connection left in the backlog)
// is retried at least every maxAcceptBackoff and stays fresh; one after
// which no connection came to succeed (a one-off error) stops counting.
const acceptFailureFresh = 5 * maxAcceptBackoff

func (l *retryListener) Accept() (net.Conn, error) {
	var b *backoff.Backoff // nil until an Accept fails
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			if b != nil {
				l.failing.Store(nil)
				l.log.Info("broker accepting connections again", "addr", l.addr.String())
			}
			return c, nil
		}
		if l.closed.Load() || errors.Is(err, net.ErrClosed) {
			if !l.closed.Load() {
				l.stopped.Store(&err)
				l.log.Error("broker listener closed; the broker accepts no more connections", "addr", l.addr.String(), "err", err)
			}
			return nil, err
		}
		l.failing.Store(&acceptFailure{err: err, at: time.Now()})
		if b == nil {
			b = backoff.New(10*time.Millisecond, maxAcceptBackoff)
		}
		wait := b.Next()
		l.log.Warn("broker accept failed; retrying", "addr", l.addr.String(), "err", err, "backoff", wait)
		time.Sleep(wait) // Close during the wait makes the next Accept fail with ErrClosed
	}
}

func (l *retryListener) health() error {
	if l.closed.Load() {
		return fmt.Errorf("kafka: the broker listener on %s is closed", l.addr)
	}
	if err := l.stopped.Load(); err != nil {
		return fmt.Errorf("kafka: the broker listener on %s stopped: %w", l.addr, *err)
	}
	if f := l.failing.Load(); f != nil && time.Since(f.at) < acceptFailureFresh {
		return fmt.Errorf("kafka: the broker on %s cannot accept connections: %w", l.addr, f.err)
	}
	return nil
}

type advertisedAddr string

func (advertisedAddr) Network() string  { return "tcp" }
func (a advertisedAddr) String() string { return string(a) }

// kfakeLogger adapts slog to kfake's logger. kfake logs every request at
// info level, which is noise for basin, so info goes to debug. It counts
// errors: kfake reports a failure to persist only by logging it.
type kfakeLogger struct {
	l      *slog.Logger
	errors atomic.Int64
	// diskFull is the latest write error for lack of space kfake logged
	// (DiskFullSince).
	diskFull atomic.Pointer[diskFullError]
}

type diskFullError struct {
	err error
	at  time.Time
}

func (k *kfakeLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	for _, a := range args {
		if err, ok := a.(error); ok && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
			k.diskFull.Store(&diskFullError{err: err, at: time.Now()})
		}
	}
	var sl slog.Level
	switch level {
	case kfake.LogLevelError:
		k.errors.Add(1)
		sl = slog.LevelError
	case kfake.LogLevelWarn:
		sl = slog.LevelWarn
	default:
		sl = slog.LevelDebug
	}
	ctx := context.Background()
	if !k.l.Enabled(ctx, sl) {
		return
	}
	k.l.Log(ctx, sl, fmt.Sprintf(format, args...))
}
