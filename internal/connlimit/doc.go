// Package connlimit caps the connections a listener holds open, in total
// and per remote host, so that a flood of connections that say nothing
// cannot use up the process's file descriptors.
//
// Every connection holds a descriptor from accept to Close, whatever it
// sends. The process has one budget of descriptors (RLIMIT_NOFILE) for
// all of them, for the Pebble stores and for the broker's log segments: a
// port without a cap lets whoever reaches it take the whole budget, and
// then the other ports, the stores and the node's own Kafka clients fail
// with EMFILE. A Listener bounds what one port can take to a share of
// the budget (FileLimit gives it).
//
// A connection past a cap is closed as soon as it is accepted, without a
// byte read or written: the client sees the connection closed or reset.
// Closing at once, rather than leaving the connection in the kernel's
// backlog until a slot frees (golang.org/x/net/netutil.LimitListener),
// keeps the accept loop moving: a flood from one host takes that host's
// share and no more, and a legitimate client from another host (a peer's
// heartbeat, a health check) is still accepted meanwhile. A flood is
// logged once per LogInterval with the number refused, not once a
// connection.
//
// The count of a connection is released by its first Close (the HTTP
// server and kfake both close a connection more than once). Connections
// from the listener's own address (SameHostExempt: the node's own Kafka
// clients, other processes on the machine) count only towards the
// total: a node's clients are many, one per task, and they must never be
// refused by a cap meant for another host.
package connlimit
