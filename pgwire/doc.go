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
text: a Query message's text goes whole to Session.Query, a Parse
message's to Session.Prepare, and results come back through ResultWriter
as columns, Go values and command tags. The engine, for its part, never
sees bytes, formats, message types, flushing or cancel keys: bind
parameters reach it decoded into Go values. Backend and Session are interfaces owned by this package (the
caller) and implemented by node/, so pgwire imports no engine package and
is tested with a fake backend. catalog.Type is the one shared vocabulary:
it gives each column's type OID, and its Go value types are what the text
and binary encoders and decoders of package pgcodec produce and accept.
pgcodec is the wire format of values (and DataRow framing) alone, shared
with the engine's raw-row path and the node-to-node reader. pgwire imports
it, catalog and internal helpers (pgerr, safe), and no engine package.

# Layers

  - Server (server.go): the listener and accept loop, the table of live
    sessions by BackendKeyData process ID (which MaxConnections bounds,
    and CancelRequest, CancelBackend and TerminateBackend look in: the
    last two are pg_cancel_backend and pg_terminate_backend), and
    Close. Options (options.go) are
    defaulted and validated once, in NewServer.

  - startup (startup.go): everything before the first ReadyForQuery:
    SSLRequest, GSSENCRequest, CancelRequest, the StartupMessage and
    protocol version negotiation, admission, authentication (auth.go:
    trust and cleartext password; scram.go: SCRAM-SHA-256 and the
    verifier format), Backend.Open, the initial ParameterStatus messages
    and BackendKeyData.

  - conn (conn.go): one client connection after startup. Its goroutine
    reads each frontend message and processes it through dispatch (see
    "One goroutine per connection" below), which hands each message kind
    to its handler, in the file named for it: query.go for Query,
    parse.go, bind.go, describe.go, execute.go and close.go for the
    extended protocol, whose statements, portals, error recovery and Sync
    are in extended.go.

  - resultWriter (result.go) and writer (writer.go): the ResultWriter the
    Session reports to, encoding RowDescription, DataRow (text or binary
    format, by pgcodec), CommandComplete, EmptyQueryResponse and
    NoticeResponse onto a per-connection buffer with the flush policy
    described below. copy.go is its COPY ... TO STDOUT side:
    CopyOutResponse, a CopyData per row in the text or csv format
    (pgcodec.AppendCopyRow), CopyDone.

  - errors.go: how any error becomes an ErrorResponse.

# Connection lifecycle

 1. Accept. The accept loop starts one goroutine per connection, counted
    in the server's WaitGroup. StartupTimeout (10 s) bounds everything up
    to step 4. A connection counts as in startup from accept to the end
    of step 4 (conn.endStartup); one that would put more than
    MaxStartupConnections in startup, or more than
    MaxStartupConnectionsPerHost from its IP address, is closed by the
    accept loop at once, before it has a goroutine or a byte is read:
    silent connections cannot use up the process's file descriptors,
    which the broker and the stores share. An Accept that fails (EMFILE)
    is retried with backoff and reported by Server.Health (/healthz)
    until one succeeds.

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
    (its cancel key), is authenticated (see Authentication below), gets
    AuthenticationOk, and Backend.Open with the startup parameters; an
    Open error refuses the connection with its SQLSTATE as FATAL.

 4. Ready. A ParameterStatus for each of Session.ParameterStatus() in name
    order, BackendKeyData, ReadyForQuery 'I'.

 5. Serve. Messages are processed in order until Terminate, a protocol
    violation, the client going away, or Close.

 6. End. The connection's portals and prepared
    statements are closed (stopping anything a suspended portal keeps
    running), Session.Close is called, the session is unregistered
    (freeing its slot and key) and the socket closed.

# One goroutine per connection

The connection's goroutine does everything: it receives a message with
pgproto3.Backend, copies the parts handlers keep out of pgproto3's reused
buffers (ownMessage), handles it, and receives the next; all writes are
its own, so output needs no lock. A client that pipelines has its later
messages wait in the socket, which bounds memory to one message (at most
MaxMessageSize). While a statement runs past watchAfter (20 ms), a
second goroutine watches the socket (peerWatch): it waits in the
runtime's poller until the socket is readable and peeks at it with
MSG_PEEK, taking nothing; end of stream or a reset ends the connection's
context, which cancels the statement at once instead of letting it run
until it next writes. (So a client that pipelines a Query and
disconnects without Terminate loses that statement, as it would on
Postgres once the server noticed.) Statements shorter than that cost no
goroutine and no hand-off; a client that hangs up during one is noticed
at the next read. This replaced a reader goroutine that handed every
message over a channel to the connection's: one send and one wake-up of
another goroutine per message, about 6 % of the node's CPU in channel
selects alone under B1's point lookups (BENCHMARKS.md).

Malformed input is reported in order, after the messages before it
have been processed; it is logged as a warning, answered with
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
ReadyForQuery with the session's transaction status (Session.TxnStatus,
see Extended query).

Values are sent in text format: bool t/f, integers in decimal, float8 as
Postgres 12+ prints it (shortest round-trip digits, exponent notation
below 1e-4 and from 1e15, NaN, Infinity, -Infinity), timestamps in ISO
style with up to six fractional digits and "BC" before year 1, text as is.
RowDescription carries each column's type OID, typlen and typmod -1, with
table OID and attribute number 0.

# Extended query

Parse, Bind, Describe, Execute, Close, Flush and Sync, with named and
unnamed statements and portals, as the protocol specifies; one file per
message kind. What each keeps:

  - Parse (parse.go) calls Session.Prepare, which parses and plans one
    statement (more than one is 42601, none is the empty statement) and
    reports each parameter's type and the result columns. The statement
    keeps them: the parameter types as ParameterDescription will report
    them, which is the client's declared OID where it gave one (int4,
    varchar, ...; an OID basin cannot decode is 0A000) and else the
    engine's inferred type (text when nothing says). A named statement
    that exists is 42P05; the unnamed one is replaced.

  - Bind (bind.go) checks the counts (08P01, Postgres's messages),
    expands the format codes (none: all text; one: for all; else one
    each) and decodes every value here, by the statement's parameter
    type and the value's format, so a malformed value is an error at
    Bind as in Postgres (22P02 and friends for text, 22P03 for binary).
    The engine's PreparedStatement.Bind gets Go values and returns a
    Portal; a value of the client's type (an int4 where the plan wants
    int8) is the engine's to convert. The portal keeps its per-column
    result formats. 42P03 for a named portal that exists; the unnamed
    one is replaced.

  - Describe (describe.go) answers from what Parse and Bind kept, without
    the engine: ParameterDescription and RowDescription (all text, as
    formats come at Bind) or NoData for a statement; RowDescription with
    the portal's formats, or NoData, for a portal.

  - Execute (execute.go) runs Portal.Execute with the row limit (0 or
    negative: none). Rows go out in the portal's formats with no
    RowDescription; the engine may call Columns, which is only checked
    against what was described. Then CommandComplete (its count is this
    Execute's rows, as in Postgres), EmptyQueryResponse, or
    PortalSuspended when the limit stopped it, and the next Execute
    resumes. A portal that fails is closed.

  - Close (close.go) closes a statement, with the portals bound from it,
    or a portal; an unknown name is no error.

Unknown statements are 26000, unknown portals 34000. After any error the
connection skips to Sync (the error itself is flushed at once, so a
client waiting after Flush sees it); Sync sends the ParameterStatus
changes and ReadyForQuery. A simple Query replaces the unnamed statement
and portal. ReadyForQuery carries the session's transaction status
(Session.TxnStatus: 'I', 'T' or 'E'); when it is 'I', every portal is
closed first, because in Postgres a portal ends with its transaction,
which outside a block is the statement or the pipeline up to Sync.
Inside a block portals survive Sync, so a client can read one in
batches (pgjdbc with a fetch size and autocommit off).

Binary format is supported both ways for every basin type: bool (one
byte), int4, int8, float8 (IEEE 754, big-endian), text (the bytes),
numeric (Postgres's base-10000 digits with weight, sign and display
scale; exact), and timestamp as int64 microseconds since 2000-01-01
(integer_datetimes is on). Bind also decodes the types clients commonly
declare for parameters: int2, float4, numeric (exactly, as NUMERIC),
varchar, bpchar, name, date and timestamptz (converted to UTC;
a zone on a plain timestamp is ignored, as in Postgres). Text input
follows Postgres's input functions for the same types (boolin's words and
prefixes, ISO timestamps with 'T' or ' ', a zone, "BC").

# Authentication

Options.Authenticator (auth.go), supplied by node/, gives the method and
each user's SCRAM-SHA-256 verifier; nil means trust. pgwire owns the
exchanges on the wire and Postgres's verifier format
("SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>", as in
pg_authid); the store never sees a message and never needs to hold a
password. The user is always the StartupMessage's, and the method may
depend on it (UserMethods: node's cluster user always uses SCRAM). With
Options.RequireTLS a connection that did not negotiate TLS is refused
with FATAL 28000 before any method runs.

  - trust: AuthenticationOk at once, any user name. node/ allows it only
    on a loopback address.

  - scram (scram.go): AuthenticationSASL offering SCRAM-SHA-256 and,
    over TLS, SCRAM-SHA-256-PLUS first (tls-server-end-point channel
    binding: the hash of the server's certificate, RFC 5929), then
    SASLInitialResponse / AuthenticationSASLContinue / SASLResponse /
    AuthenticationSASLFinal, per RFC 5802 and 7677 in Postgres's
    framing; the SCRAM arithmetic, the binding check and the
    constant-time proof check are github.com/xdg-go/scram's. Over TLS
    the gs2 flag 'p' goes with PLUS (pgx and libpq bind by default, and
    channel_binding=require clients insist), 'n' is accepted and 'y' is
    a downgrade (refused); in plaintext 'n' and 'y' are accepted and
    'p' is 08P01. As in Postgres, the user name inside the SCRAM message is
    ignored (clients leave it empty), and an unknown user gets a mock
    verifier whose salt is stable per name (an HMAC of the name under a
    per-process secret) and whose keys match no proof, so the exchange
    fails at the proof exactly like a wrong password.

  - password: AuthenticationCleartextPassword, checked by deriving the
    verifier's keys from the password (PBKDF2 with the verifier's salt
    and iterations, also for unknown users, so timing does not tell).
    Only over TLS: on a plaintext connection it is refused with FATAL
    28000 "cleartext password authentication requires a TLS connection"
    before the client is asked for the password. Options.Validate
    refuses the method without TLSConfig.

Passwords are SASLprep'd (RFC 4013), falling back to the raw string
when SASLprep refuses it, as Postgres and libpq do; a verifier made by
Postgres works here and one made here (NewSCRAMVerifier, `basin
passwd`) works in Postgres. pgx normalizes with PRECIS instead, so a
password that SASLprep changes (compatibility characters, soft hyphens)
fails from pgx here exactly as it does against Postgres.

A wrong password and an unknown user both get FATAL 28P01 'password
authentication failed for user "x"'; the log (warn) has the user, the
remote address, the method and the real reason, never the password or
the proof (errors about client-final-message are logged by their RFC
5802 error value only). A malformed exchange is FATAL 08P01. Responses
are read, like startup packets, with exact-length reads from the socket
(at most 64 KiB each, Postgres's PG_MAX_AUTH_TOKEN_LENGTH), so a query
pipelined behind the last response is not lost; a client that hangs up
instead of answering (psql does, to prompt for a password) is logged at
debug only. Everything runs inside StartupTimeout.

# Errors

An error carrying a SQLSTATE (*pgerr.Error anywhere in its chain) is sent
as it is: severity, code, message, detail, hint and position. Anything
else reaching this boundary is a bug: the client gets XX000 "internal
error: <message>" and the log gets the error with a stack. Panics in the
Backend (Open, Query, Prepare, Bind, Execute, ParameterStatus, Close)
are recovered and reported the same way, with the stack of the
panicking goroutine, and the connection goes on; so are panics the
engine recovered on goroutines of its own (a *safe.PanicError in the
error carries their stack). A panic in pgwire's own handling of a
connection ends that connection only: the client gets FATAL XX000, the
log the panic with its stack. Misuse of the ResultWriter by the engine
(a Row before Columns, a Go value that is not its column type's) is such
a bug; the stream stays well-formed.

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
client's reading speed throttles it through TCP. A statement that produces rows
over a long time (a COPY of a live source) calls ResultWriter.Flush
before it waits, so what it has written does not sit in the buffer. A buffer grown by one
huge row is dropped after it is written.

# Shutdown

Close stops the listener and cancels the server's context, the parent of
every connection's. Each connection then expires its read deadline (which
ends its wait for the next message, and any startup in progress) and
gives its writes one second: a running statement sees its context end, the client gets FATAL
57P01 "terminating connection due to administrator command", and the
connection closes. Close returns when every connection goroutine has; it
relies on Session.Query honouring its context.

# Testing and debugging

  - testdata/pgtest holds message scripts (TestProtocolScripts): frontend
    messages sent as pgproto3 JSON or raw bytes, and the backend messages
    expected. Rewrite the expected output with -rewrite and review the
    diff. Most protocol behaviour, including every violation case, is
    pinned there.
  - testdata/pgtest/extended and extended_errors pin the extended
    protocol message by message, binary DataRows printed in hex.
  - Real clients: pgx in the simple protocol (pgx_test.go) and in each
    extended mode (extended_test.go: binary results and parameters of
    every type, named statements, errors in pipelines, cancel, a
    100000-row portal read in batches), and the psql binary
    (psql_test.go), which the tests require. The fake backend's side of
    the extended protocol is fake_extended_test.go; node/'s
    extended_test.go runs the same protocol against the real engine.
  - FuzzConn feeds arbitrary bytes after a valid startup; its corpus is
    testdata/fuzz/FuzzConn.
  - Authentication (auth_test.go): pgx and psql logging in with SCRAM
    and cleartext passwords against verifiers made by PostgreSQL 15,
    the RFC 7677 example exchange, raw exchanges for what real clients
    never send, and FuzzSCRAMAuth over the SASL responses. A failed
    login's log line says why (user, reason); the client is told only
    28P01, on purpose.
  - The log: connection lifecycle at debug, protocol violations at warn
    with the remote address, internal errors at error with the stack and
    the session's pid. For a byte-level view, run a script against the
    server or capture with Wireshark's pgsql dissector.

# What's next

COPY FROM STDIN and binary COPY, direct TLS (sslnegotiation=direct), tls-exporter channel binding,
and certificate reload without a restart.
*/
package pgwire
