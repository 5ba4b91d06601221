package pgwire

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgproto3"
)

// flushThreshold is the buffered size past which the writer flushes on
// its own. Below it, messages wait for a protocol point that needs the
// client to see them (ReadyForQuery, a notice, Flush). 64 KiB is a few
// TCP windows' worth: large enough that a scan costs one write per
// several hundred rows, small enough that memory stays flat however many
// rows a statement streams.
const flushThreshold = 64 << 10

// writer buffers outgoing backend messages for one connection. Only the
// connection's processing goroutine uses it.
//
// pgproto3.Backend can also buffer (Send/Flush) but does not expose how
// much it holds, which the flush policy needs; so pgproto3 encodes and
// writer owns the buffer.
type writer struct {
	w   io.Writer
	buf []byte
	// err is the first write error. It is sticky: after a failed write
	// the stream may hold half a message, so nothing more may be sent.
	err error
}

// send encodes msg into the buffer and flushes if the buffer has grown
// past flushThreshold. An encoding error (a message over 1 GiB)
// leaves the buffer as it was and the connection usable.
func (w *writer) send(msg pgproto3.BackendMessage) error {
	if w.err != nil {
		return w.err
	}
	b, err := msg.Encode(w.buf)
	if err != nil {
		return fmt.Errorf("pgwire: encode %T: %w", msg, err)
	}
	w.buf = b
	return w.added()
}

// sendCommandComplete sends CommandComplete with tag (NULs dropped),
// encoded in place: send(&pgproto3.CommandComplete{...}) would allocate
// the message and the tag's bytes, once per statement.
func (w *writer) sendCommandComplete(tag string) error {
	if w.err != nil {
		return w.err
	}
	tag = cstring(tag)
	w.buf = append(w.buf, 'C')
	w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(4+len(tag)+1))
	w.buf = append(append(w.buf, tag...), 0)
	return w.added()
}

// sendReadyForQuery sends ReadyForQuery with status, encoded in place.
func (w *writer) sendReadyForQuery(status byte) error {
	if w.err != nil {
		return w.err
	}
	w.buf = append(w.buf, 'Z', 0, 0, 0, 5, status)
	return w.added()
}

// added flushes once the buffer has grown past flushThreshold, after a
// message was added.
func (w *writer) added() error {
	if len(w.buf) >= flushThreshold {
		return w.flush()
	}
	return nil
}

// sendRaw adds already encoded messages.
func (w *writer) sendRaw(b []byte) error {
	if w.err != nil {
		return w.err
	}
	w.buf = append(w.buf, b...)
	return w.added()
}

// flush writes whatever is buffered.
func (w *writer) flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(w.buf)
	if cap(w.buf) > 4*flushThreshold {
		// One huge row grew the buffer; do not keep it for the life of
		// the connection.
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	if err != nil {
		w.err = fmt.Errorf("pgwire: write to client: %w", err)
	}
	return w.err
}

// buffered reports the number of bytes waiting for flush.
func (w *writer) buffered() int { return len(w.buf) }
