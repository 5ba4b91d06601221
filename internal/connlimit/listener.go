package connlimit

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// LogInterval is the least time between two warnings about refused
// connections.
const LogInterval = 10 * time.Second

// Options configure a Listener.
type Options struct {
	// Max bounds the connections open at once, in total; MaxPerHost the
	// connections from one remote IP address. Both must be positive.
	Max        int
	MaxPerHost int
	// SameHostExempt counts a connection whose remote IP address is the
	// listener's own (a client on this machine dialling the address the
	// listener is bound to) towards Max only.
	SameHostExempt bool
	// Name names the listener in its warnings ("broker", "http").
	Name string
	// Logger receives the warnings about refused connections. Default
	// slog.Default().
	Logger *slog.Logger
}

// Listener is a net.Listener whose Accept returns only the connections
// within its caps and closes the others at once. See the package
// documentation.
type Listener struct {
	net.Listener
	opts Options

	mu struct {
		sync.Mutex
		// open counts the connections Accept returned and that are not
		// yet closed, byHost the same by remote IP address (without the
		// exempt ones).
		open   int
		byHost map[string]int
		// changed, when not nil, is closed (and cleared) at the next
		// change of open: what waits for a count (tests) selects on it.
		changed chan struct{}
	}

	// refused counts the connections closed at accept since the last
	// warning; lastLog is when that warning was (unix nanoseconds).
	refused atomic.Int64
	lastLog atomic.Int64
}

// NewListener caps the connections of ln as opts says.
func NewListener(ln net.Listener, opts Options) *Listener {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	l := &Listener{Listener: ln, opts: opts}
	l.mu.byHost = make(map[string]int)
	return l
}

// Accept waits for the next connection within the caps. It closes the
// ones past them as they come; an error of the underlying Accept is
// returned as it is.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host, perHost := l.hostOf(nc)
		if l.admit(host, perHost) {
			return &conn{Conn: nc, l: l, host: host, perHost: perHost}, nil
		}
		_ = nc.Close()
		l.logRefused(nc.RemoteAddr())
	}
}

// hostOf is the remote IP address of nc, what MaxPerHost counts by, and
// whether MaxPerHost applies to it.
func (l *Listener) hostOf(nc net.Conn) (string, bool) {
	host := Host(nc.RemoteAddr())
	if l.opts.SameHostExempt && host == Host(nc.LocalAddr()) {
		return host, false
	}
	return host, true
}

// admit counts a new connection from host, unless it would exceed a cap.
func (l *Listener) admit(host string, perHost bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.open >= l.opts.Max || (perHost && l.mu.byHost[host] >= l.opts.MaxPerHost) {
		return false
	}
	l.mu.open++
	if perHost {
		l.mu.byHost[host]++
	}
	l.changedLocked()
	return true
}

// release stops counting a connection from host; conn.Close calls it
// once.
func (l *Listener) release(host string, perHost bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.open--
	if perHost {
		if l.mu.byHost[host]--; l.mu.byHost[host] <= 0 {
			delete(l.mu.byHost, host)
		}
	}
	l.changedLocked()
}

// changedLocked wakes what waits for the count to change. l.mu must be
// held.
func (l *Listener) changedLocked() {
	if l.mu.changed != nil {
		close(l.mu.changed)
		l.mu.changed = nil
	}
}

// Open returns the number of connections open (accepted and not closed)
// and a channel closed when that number next changes.
func (l *Listener) Open() (int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.changed == nil {
		l.mu.changed = make(chan struct{})
	}
	return l.mu.open, l.mu.changed
}

// logRefused warns about connections refused over a cap, at most once per
// LogInterval with the count since the last warning.
func (l *Listener) logRefused(remote net.Addr) {
	l.refused.Add(1)
	now := time.Now().UnixNano()
	last := l.lastLog.Load()
	if now-last < int64(LogInterval) || !l.lastLog.CompareAndSwap(last, now) {
		return
	}
	open, _ := l.Open()
	l.opts.Logger.Warn(l.opts.Name+": too many open connections; closing new ones at once",
		"refused", l.refused.Swap(0), "last_remote", remote.String(), "open", open,
		"max_connections", l.opts.Max, "max_connections_per_host", l.opts.MaxPerHost)
}

// conn is a connection Accept returned; its first Close releases its
// count.
type conn struct {
	net.Conn
	l       *Listener
	host    string
	perHost bool
	once    sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.host, c.perHost) })
	return err
}

// Host is the IP address of addr, what the per-host cap counts by; the
// whole address when it has no port.
func Host(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	if ta, ok := addr.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}
