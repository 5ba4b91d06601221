/*
Package pgwire is basin's front door: the server side of the PostgreSQL
wire protocol, version 3.0. psql, every Postgres driver and BI tools
connect here; what they send reaches the engine through the Backend and
Session interfaces (backend.go), and what the engine produces goes back
as protocol messages. Framing and message encoding are pgx's pgproto3;
this package owns the state machine around them.

The protocol itself is specified upstream and this comment assumes it:
https://www.postgresql.org/docs/current/protocol-flow.html and
https://www.postgresql.org/docs/current/protocol-message-formats.html.

# Why the boundary is here

pgwire knows the protocol and nothing of SQL. It never parses statement
text: a Query message's text goes whole to Session.Query, and results come
back through ResultWriter as columns, Go values and command tags. The
engine, for its part, never sees bytes, message types, flushing or cancel
keys. Backend and Session are interfaces owned by this package (the
caller) and implemented by node/, so pgwire imports no engine package and
is tested with a fake backend. catalog.Type is the one shared vocabulary:
it gives each column's type OID, and its Go value types are what the text
encoders in types.go accept.

# Layers

  - Server (server.go): the listener and accept loop, the table of live
    sessions by BackendKeyData process ID (which MaxConnections bounds
    and CancelRequest looks in), and Close. Options (options.go) are
    defaulted and validated once, in NewServer.

  - startup (startup.go): everything before the first ReadyForQuery:
    SSLRequest, GSSENCRequest, CancelRequest, the StartupMessage and
    protocol version negotiation, admission, authentication (trust, for
    now), Backend.Open, the initial ParameterStatus messages and
    BackendKeyData.

  - conn (conn.go): one client connection after startup. A reader
    goroutine decodes frontend messages; the connection's own goroutine
    processes them in order through dispatch, which hands each message
    kind to its handler: query.go for Query, extended.go for the
    extended protocol.

  - resultWriter (result.go) and writer (writer.go): the ResultWriter the
    Session reports to, encoding RowDescription, DataRow (text format, by
    types.go), CommandComplete, EmptyQueryResponse and NoticeResponse onto
    a per-connection buffer with the flush policy described below.

  - errors.go: how any error becomes an ErrorResponse.

# Connection lifecycle

 1. Accept. The accept loop starts one goroutine per connection, counted
    in the server's WaitGroup. StartupTimeout bounds everything up to
    step 4.

 2. Negotiate. Startup packets are read with exact-length reads straight
    from the socket, not through a buffered reader, so no byte sent after
    an SSLRequest can be consumed in plaintext and then trusted as if it
    had come over TLS (CVE-2021-23214). SSLRequest is answered 'S' and
    the socket upgraded with tls.Server when Options.TLSConfig is set, 'N'
    otherwise; GSSENCRequest always 'N'. A CancelRequest is acted on and
    the socket closed, with no answer either way. A malformed or oversized
    startup packet closes the socket unanswered (nothing is known yet
    about what the client speaks); protocol versions other than 3.x get
    FATAL 0A000.

 3. Start. The StartupMessage must name a user. Protocol 3.x for x > 0,
    and "_pq_." protocol options, are answered with
    NegotiateProtocolVersion (3.0, options unrecognized), so newer clients
    fall back rather than fail. The connection is then registered as a
    session: over MaxConnections it gets FATAL 53300 "sorry, too many
    clients already" and closes. It gets a process ID and a random secret
    (its cancel key), AuthenticationOk, and Backend.Open with the startup
    parameters; an Open error refuses the connection with its SQLSTATE as
    FATAL.

 4. Ready. A ParameterStatus for each of Session.ParameterStatus() in name
    order, BackendKeyData, ReadyForQuery 'I'.

 5. Serve. Messages are processed in order until Terminate, a protocol
    violation, the client going away, or Close.

 6. End. The reader is joined, Session.Close is called, the session is
    unregistered (freeing its slot and key) and the socket closed.

# Two goroutines per connection

The reader goroutine owns the socket's read side: it receives a message
with pgproto3.Backend, copies it out of pgproto3's reused buffers
(ownMessage) and passes it over an unbuffered channel. The connection's
goroutine does everything else, including all writes, so output needs no
lock. The reader is thus at most one message ahead, which bounds memory
to two messages (each at most MaxMessageSize), and while a statement runs
it is usually blocked in a read: a client that hangs up ends the
connection's context at once, which cancels the statement, instead of the
statement running on until it next writes. (So a client that pipelines a
Query and disconnects without Terminate loses that statement, as it would
on Postgres once the server noticed.) This is CockroachDB's split between
its reader and the connExecutor, without the statement buffer: the
Session executes synchronously on the connection's goroutine.

Malformed input is reported by the reader in order, after the messages
before it have been processed; it is logged as a warning, answered with
FATAL 08P01 and ends the connection, never the server. Any length above
MaxMessageSize (default 64 MiB) is refused before its body is read. Before
closing after a violation the server half-closes a plaintext TCP
connection and drains what the client still sends, for up to a second,
so the FATAL is not lost to a TCP reset.

# Simple query

A Query message runs as one call to Session.Query(ctx, text, w). The
session reports each statement's result as it goes: Columns, then Row per
row, then Complete with the command tag; or Empty. After it returns the
connection sends the error, if any, a ParameterStatus for each parameter
whose value changed (this is how SET reaches the client), and
ReadyForQuery with the transaction status, which is 'I' until sessions
report transaction blocks.

Values are sent in text format: bool t/f, integers in decimal, float8 as
Postgres 12+ prints it (shortest round-trip digits, exponent notation
below 1e-4 and from 1e15, NaN, Infinity, -Infinity), timestamps in ISO
style with up to six fractional digits and "BC" before year 1, text as is.
RowDescription carries each column's type OID, typlen and typmod -1, with
table OID and attribute number 0.

# Errors

An error carrying a SQLSTATE (*pgerr.Error anywhere in its chain) is sent
as it is: severity, code, message, detail, hint and position. Anything
else reaching this boundary is a bug: the client gets XX000 "internal
error: <message>" and the log gets the error with a stack. Panics in the
Backend (Open, Query, ParameterStatus, Close) are recovered and reported
the same way, with the stack of the panicking goroutine, and the
connection goes on. Misuse of the ResultWriter by the engine (a Row before
Columns, a Go value that is not its column type's) is such a bug; the
stream stays well-formed.

# Cancellation

Postgres cancels out of band: a client opens a new connection and sends a
CancelRequest with the process ID and secret it got in BackendKeyData.
The server finds that session, compares the secret in constant time, and
cancels the context of the statement running on it with cause
errCancelRequested; a cancel between statements cancels nothing. When a
cancelled statement returns context.Canceled, or its own 57014, the client
gets 57014 "canceling statement due to user request" and the connection
goes on. Nothing is sent on the cancel connection. Cancel keys are local
to one server: forwarding a cancel to the node that holds the session, as
CockroachDB does, is for when connections are routed across nodes.

# Flushing

Messages are encoded into a per-connection buffer and written when
something needs the client to see them: ReadyForQuery, an error in the
extended protocol, a NoticeResponse (a freshness notice before a long wait
must arrive before the wait), a Flush message, or the buffer passing 64
KiB. A scan of any length therefore streams at about one write per 64 KiB
in flat memory: rows reach the client while the statement runs, and the
client's reading speed throttles it through TCP. A buffer grown by one
huge row is dropped after it is written.

# Shutdown

Close stops the listener and cancels the server's context, the parent of
every connection's. Each connection then expires its read deadline (which
ends its reader, and any startup in progress) and gives its writes one
second: a running statement sees its context end, the client gets FATAL
57P01 "terminating connection due to administrator command", and the
connection closes. Close returns when every connection goroutine has; it
relies on Session.Query honouring its context.

# Testing and debugging

  - testdata/pgtest holds message scripts (TestProtocolScripts): frontend
    messages sent as pgproto3 JSON or raw bytes, and the backend messages
    expected. Rewrite the expected output with -rewrite and review the
    diff. Most protocol behaviour, including every violation case, is
    pinned there.
  - Real clients: pgx (pgx_test.go) in the simple protocol, and the psql
    binary (psql_test.go), which the tests require.
  - FuzzConn feeds arbitrary bytes after a valid startup; its corpus is
    testdata/fuzz/FuzzConn.
  - The log: connection lifecycle at debug, protocol violations at warn
    with the remote address, internal errors at error with the stack and
    the session's pid. For a byte-level view, run a script against the
    server or capture with Wireshark's pgsql dissector.

# What's next

The extended query protocol. Parse, Bind, Describe, Execute and Close
already reach dispatch as owned messages; today each is refused with
0A000 and the connection skips to Sync, as after any extended-protocol
error, so pipelines end in ReadyForQuery and the connection stays usable.
Next, each gets its own file (parse.go, bind.go, ...) with prepared
statements and portals held on conn, Session grows prepare/describe/bind
entry points (parameter types from $n, result columns before execution),
Execute honours row limits with PortalSuspended, and binary result
formats join text in types.go. After that: transaction status from the
session, password/SCRAM authentication, COPY, and direct TLS
(sslnegotiation=direct).
*/
package pgwire
