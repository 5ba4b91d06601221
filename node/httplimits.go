package node

import (
	"net"
	"time"

	"github.com/basindb/basin/internal/connlimit"
)

// The HTTP address's limits. Its clients are few: the cluster's peers
// (a heartbeat every HeartbeatInterval and a lag report to every node,
// each over a kept-alive connection or two), Prometheus, health checks
// and an operator's pprof. A flood of connections that send nothing
// would otherwise hold a descriptor each until the process had none
// left; capped, a flood from one host takes maxHTTPConnectionsPerHost
// and a peer on another host is still accepted (connlimit closes
// connections past a cap at once rather than leaving them queued, so
// heartbeats are not starved).
const (
	// maxHTTPConnections bounds the open connections, or a sixteenth of
	// the process's descriptor limit when that is less;
	// maxHTTPConnectionsPerHost those from one IP address, or half the
	// total when that is less, so that one host never takes them all.
	maxHTTPConnections        = 256
	maxHTTPConnectionsPerHost = 64

	// httpReadHeaderTimeout bounds the time to read a request's header
	// (a new connection's first request must be in within it);
	// httpReadTimeout the time to read a whole request, body included
	// (the cluster endpoints' bodies are small and bounded). Once the
	// request is read, net/http lifts the read deadline, so a handler
	// may run longer. There is no write timeout: the profiles under
	// /debug/pprof stream for as long as asked (?seconds=), and a write
	// timeout would cut them short (pprof refuses a profile longer than
	// it).
	httpReadHeaderTimeout = 10 * time.Second
	httpReadTimeout       = 30 * time.Second
	// httpIdleTimeout closes a kept-alive connection idle that long:
	// longer than the peers' own (net/http's default 90 s), so that a
	// peer is the one closing and never sends a POST on a connection
	// this node is closing.
	httpIdleTimeout = 2 * time.Minute
)

// testHTTPConnLimits, when a test sets it, replaces the caps of the HTTP
// address's connections: the total and the per-host cap.
var testHTTPConnLimits *[2]int

// limitHTTPListener caps the connections ln holds open (see the
// constants above).
func (n *Node) limitHTTPListener(ln net.Listener) *connlimit.Listener {
	total, perHost := maxHTTPConnections, maxHTTPConnectionsPerHost
	if limit := connlimit.FileLimit(); limit > 0 {
		total = max(1, min(total, limit/16))
	}
	perHost = max(1, min(perHost, total/2))
	if testHTTPConnLimits != nil {
		total, perHost = testHTTPConnLimits[0], testHTTPConnLimits[1]
	}
	return connlimit.NewListener(ln, connlimit.Options{
		Max:        total,
		MaxPerHost: perHost,
		Name:       "http",
		Logger:     n.log,
	})
}
