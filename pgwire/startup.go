package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/basindb/basin/internal/pgerr"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Codes of the first packet, in place of a protocol version
// (src/include/libpq/pqcomm.h).
const (
	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104
	cancelRequestCode = 80877102
)

// maxStartupPacketLen is Postgres's MAX_STARTUP_PACKET_LENGTH: a startup
// packet is read before anything is known about the client, so it is
// kept small.
const maxStartupPacketLen = 10000

// errBadStartupPacket marks malformed startup packets, which are logged
// as protocol violations; other startup read errors are a client that
// went away.
var errBadStartupPacket = errors.New("pgwire: bad startup packet")

// startup runs the connection from accept to its first ReadyForQuery: TLS
// and GSS negotiation, CancelRequest, the StartupMessage, admission,
// authentication, Backend.Open and the initial ParameterStatus and BackendKeyData. It
// reports false when the connection must close (a cancel request is
// always one packet and done).
//
// Startup packets are read with exact-length reads straight from the
// socket, not through pgproto3's buffered reader, so that no byte a client
// sends after SSLRequest can be read in plaintext and then treated as if
// it came over TLS (CVE-2021-23214); pgproto3 decodes the packets.
func (c *conn) startup() bool {
	deadline := time.Now().Add(c.srv.opts.StartupTimeout)
	_ = c.raw.SetDeadline(deadline)
	if c.ctx.Err() != nil {
		return false // Close ran before the deadline was set
	}
	sm := c.negotiate()
	if sm == nil {
		return false
	}
	if !c.admit(sm.Parameters, deadline) {
		return false
	}
	_ = c.raw.SetDeadline(time.Time{})
	return c.ctx.Err() == nil
}

// negotiate reads startup packets until the StartupMessage, answering
// SSLRequest and GSSENCRequest on the way. It returns nil when the
// connection must close.
func (c *conn) negotiate() *pgproto3.StartupMessage {
	var sawSSL, sawGSS bool
	for {
		body, err := c.readStartupPacket()
		if err != nil {
			if errors.Is(err, errBadStartupPacket) {
				c.log.Warn("pgwire: protocol violation in startup; closing connection", "err", err)
			} else {
				c.log.Debug("pgwire: connection closed during startup", "err", err)
			}
			return nil
		}
		code := binary.BigEndian.Uint32(body)
		switch code {
		case sslRequestCode:
			if sawSSL {
				c.log.Warn("pgwire: protocol violation in startup; closing connection", "err", "second SSLRequest")
				return nil
			}
			sawSSL, sawGSS = true, true // no GSS encryption inside TLS
			if !c.answerSSL() {
				return nil
			}
		case gssEncRequestCode:
			if sawGSS {
				c.log.Warn("pgwire: protocol violation in startup; closing connection", "err", "second GSSENCRequest")
				return nil
			}
			sawGSS = true
			// GSSAPI encryption is not supported; the client goes on in
			// plaintext or asks for SSL next.
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return nil
			}
		case cancelRequestCode:
			var cr pgproto3.CancelRequest
			if err := cr.Decode(body); err != nil {
				c.log.Warn("pgwire: protocol violation in startup; closing connection", "err", err)
				return nil
			}
			c.srv.cancelRequest(cr.ProcessID, cr.SecretKey)
			return nil
		default:
			return c.startupMessage(body)
		}
	}
}

// readStartupPacket reads one length-prefixed startup packet and returns
// its body, which is at least 4 bytes (the version or request code).
func (c *conn) readStartupPacket() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		return nil, err
	}
	n := int64(int32(binary.BigEndian.Uint32(hdr[:])))
	if n < 8 || n > maxStartupPacketLen {
		return nil, fmt.Errorf("%w: invalid length %d", errBadStartupPacket, n)
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return nil, fmt.Errorf("%w: incomplete packet: %w", errBadStartupPacket, err)
	}
	return body, nil
}

// answerSSL answers an SSLRequest: 'N' without a TLS config, else 'S' and
// the TLS handshake, after which the connection continues over TLS.
func (c *conn) answerSSL() bool {
	cfg := c.srv.opts.TLSConfig
	if cfg == nil {
		_, err := c.nc.Write([]byte{'N'})
		return err == nil
	}
	if _, err := c.nc.Write([]byte{'S'}); err != nil {
		return false
	}
	tc := tls.Server(c.raw, cfg)
	if err := tc.HandshakeContext(c.ctx); err != nil {
		c.log.Warn("pgwire: TLS handshake failed; closing connection", "err", err)
		return false
	}
	c.nc = tc
	c.w.w = tc
	return true
}

// startupMessage decodes a StartupMessage. Protocol 3.x is accepted and
// served as 3.0: a later minor version, and any protocol option ("_pq_.*"
// parameter), gets a NegotiateProtocolVersion saying so, as Postgres
// does. It returns nil when the connection must close.
func (c *conn) startupMessage(body []byte) *pgproto3.StartupMessage {
	version := binary.BigEndian.Uint32(body)
	major, minor := version>>16, version&0xffff
	if major != 3 {
		c.fatal(pgerr.New(pgerr.FeatureNotSupported,
			"unsupported frontend protocol %d.%d: server supports 3.0", major, minor))
		return nil
	}
	// pgproto3 decodes only the versions it knows; the parameter layout
	// is the same for every 3.x.
	binary.BigEndian.PutUint32(body, pgproto3.ProtocolVersion30)
	sm := &pgproto3.StartupMessage{}
	if err := sm.Decode(body); err != nil {
		c.log.Warn("pgwire: protocol violation in startup; closing connection", "err", err)
		c.fatal(pgerr.New(pgerr.ProtocolViolation, "invalid startup packet layout: %v", err))
		return nil
	}
	var unrecognized []string
	for name := range sm.Parameters {
		if strings.HasPrefix(name, "_pq_.") {
			unrecognized = append(unrecognized, name)
			delete(sm.Parameters, name)
		}
	}
	if minor > 0 || len(unrecognized) > 0 {
		slices.Sort(unrecognized)
		if err := c.w.send(&pgproto3.NegotiateProtocolVersion{
			NewestMinorProtocol: 0,
			UnrecognizedOptions: unrecognized,
		}); err != nil {
			return nil
		}
	}
	if sm.Parameters["user"] == "" {
		c.fatal(pgerr.New(pgerr.InvalidAuthorizationSpecification, "no PostgreSQL user name specified in startup packet"))
		return nil
	}
	return sm
}

// admit turns a connection with a StartupMessage into a session: it
// counts it against MaxConnections, authenticates it (auth.go), opens
// the Session and sends what a client expects before its first query.
func (c *conn) admit(params map[string]string, deadline time.Time) bool {
	// The secret is set before register publishes c to CancelRequests.
	if _, err := rand.Read(c.secret[:]); err != nil {
		c.fatal(c.internalError(fmt.Errorf("pgwire: cancel key: %w", err)))
		return false
	}
	if e := c.srv.register(c); e != nil {
		c.log.Warn("pgwire: connection refused", "err", e.Message, "code", string(e.Code))
		c.fatal(e)
		return false
	}
	c.log = c.log.With("pid", c.pid)
	if !c.authenticate(params["user"]) {
		return false
	}

	ctx, cancel := context.WithDeadline(c.ctx, deadline)
	defer cancel()
	err := callSafely(func() error {
		sess, err := c.srv.backend.Open(ctx, params, ConnInfo{PID: c.pid, RemoteAddr: c.raw.RemoteAddr(), TLS: c.nc != c.raw})
		c.sess = sess
		return err
	})
	if err != nil {
		// A Session returned with an error is still closed, by serve.
		var e *pgerr.Error
		if pe, ok := pgerr.As(err); ok {
			e = pe
			c.log.Info("pgwire: session refused", "err", err, "code", string(pe.Code))
		} else {
			e = c.internalError(err)
		}
		c.fatal(e)
		return false
	}
	if c.sess == nil {
		c.fatal(c.internalError(errors.New("pgwire: Backend.Open returned a nil Session")))
		return false
	}
	if err := callSafely(func() error { c.sess.SetWake(c.notify.wake); return nil }); err != nil {
		c.fatal(c.internalError(err))
		return false
	}

	if err := c.reportParameters(); err != nil {
		return false
	}
	if err := c.w.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret[:]}); err != nil {
		return false
	}
	if err := c.sendReady(); err != nil {
		return false
	}
	c.log.Debug("pgwire: session started", "user", params["user"], "database", params["database"],
		"application_name", params["application_name"])
	return true
}

// reportParameters sends a ParameterStatus for every parameter of the
// session whose value differs from what the client last heard, in name
// order. It runs at startup and after every Query, which is how a SET
// reaches the client.
func (c *conn) reportParameters() error {
	var ps map[string]string
	if err := callSafely(func() error { ps = c.sess.ParameterStatus(); return nil }); err != nil {
		c.internalError(err)
		return nil // the client just misses an update; not worth the connection
	}
	// A session may return the very map it returned last time when
	// nothing changed (exec's does): then there is nothing to compare.
	if ps != nil && c.lastStatus != nil && reflect.ValueOf(ps).UnsafePointer() == reflect.ValueOf(c.lastStatus).UnsafePointer() {
		return nil
	}
	c.lastStatus = ps
	if c.reported == nil {
		c.reported = make(map[string]string, len(ps))
	}
	// Most Syncs change nothing: find what changed before sorting.
	var changed []string
	for name, v := range ps {
		if old, ok := c.reported[name]; !ok || old != v {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	for _, name := range changed {
		v := ps[name]
		c.reported[name] = v
		if err := c.w.send(&pgproto3.ParameterStatus{Name: cstring(name), Value: cstring(v)}); err != nil {
			return err
		}
	}
	return nil
}
