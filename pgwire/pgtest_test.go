package pgwire

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/cockroachdb/datadriven"
	"github.com/jackc/pgx/v5/pgproto3"
)

// TestProtocolScripts runs the message scripts in testdata/pgtest, in the
// manner of CockroachDB's pgtest: each sends frontend messages and lists
// the backend messages the server answers with. Regenerate the expected
// output with
//
//	go test ./pgwire -run TestProtocolScripts -rewrite
//
// and review the diff. Commands:
//
//	connect                 open a new connection (no startup)
//	startup [quiet]         send a StartupMessage (user=basin database=basin)
//	                        and print the answer up to ReadyForQuery
//	send                    one message per line: `Type {json}` (pgproto3's
//	                        JSON form) or `raw "<Go-quoted bytes>"`
//	until [ignore=T,...]    print messages until each listed type arrives in
//	                        turn; EOF means the server closed the connection
//	read-byte               read one unframed byte (the SSLRequest answer)
//
// Every file gets its own server, with MaxMessageSize 1 MiB.
func TestProtocolScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/pgtest", func(t *testing.T, path string) {
		ts := startServer(t, Options{MaxMessageSize: 1 << 20})
		var sc *scriptConn
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "connect" && sc == nil {
				d.Fatalf(t, "%s before connect", d.Cmd)
			}
			switch d.Cmd {
			case "connect":
				nc := ts.dial(t)
				sc = &scriptConn{nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
				return ""
			case "startup":
				sc.fe.Send(&pgproto3.StartupMessage{
					ProtocolVersion: pgproto3.ProtocolVersion30,
					Parameters:      map[string]string{"user": "basin", "database": "basin"},
				})
				if err := sc.fe.Flush(); err != nil {
					d.Fatalf(t, "send: %v", err)
				}
				out := sc.until(t, []string{"ReadyForQuery"}, nil)
				if d.HasArg("quiet") {
					return ""
				}
				return out
			case "send":
				for _, line := range strings.Split(d.Input, "\n") {
					if err := sc.send(line); err != nil {
						d.Fatalf(t, "%s: %v", line, err)
					}
				}
				return ""
			case "until":
				var ignore []string
				if arg, ok := d.Arg("ignore"); ok {
					ignore = arg.Vals
				}
				return sc.until(t, strings.Fields(d.Input), ignore)
			case "read-byte":
				var b [1]byte
				if _, err := io.ReadFull(sc.nc, b[:]); err != nil {
					return fmt.Sprintf("error: %v\n", err)
				}
				return strconv.QuoteRune(rune(b[0])) + "\n"
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}

// scriptConn is a client connection driven by a script.
type scriptConn struct {
	nc net.Conn
	fe *pgproto3.Frontend
}

// frontendMessages are the messages a script may send by name.
var frontendMessages = map[string]func() pgproto3.FrontendMessage{
	"StartupMessage":  func() pgproto3.FrontendMessage { return &pgproto3.StartupMessage{} },
	"SSLRequest":      func() pgproto3.FrontendMessage { return &pgproto3.SSLRequest{} },
	"GSSEncRequest":   func() pgproto3.FrontendMessage { return &pgproto3.GSSEncRequest{} },
	"CancelRequest":   func() pgproto3.FrontendMessage { return &pgproto3.CancelRequest{} },
	"Query":           func() pgproto3.FrontendMessage { return &pgproto3.Query{} },
	"Parse":           func() pgproto3.FrontendMessage { return &pgproto3.Parse{} },
	"Bind":            func() pgproto3.FrontendMessage { return &pgproto3.Bind{} },
	"Describe":        func() pgproto3.FrontendMessage { return &pgproto3.Describe{} },
	"Execute":         func() pgproto3.FrontendMessage { return &pgproto3.Execute{} },
	"Close":           func() pgproto3.FrontendMessage { return &pgproto3.Close{} },
	"Sync":            func() pgproto3.FrontendMessage { return &pgproto3.Sync{} },
	"Flush":           func() pgproto3.FrontendMessage { return &pgproto3.Flush{} },
	"Terminate":       func() pgproto3.FrontendMessage { return &pgproto3.Terminate{} },
	"FunctionCall":    func() pgproto3.FrontendMessage { return &pgproto3.FunctionCall{} },
	"CopyData":        func() pgproto3.FrontendMessage { return &pgproto3.CopyData{} },
	"CopyDone":        func() pgproto3.FrontendMessage { return &pgproto3.CopyDone{} },
	"CopyFail":        func() pgproto3.FrontendMessage { return &pgproto3.CopyFail{} },
	"PasswordMessage": func() pgproto3.FrontendMessage { return &pgproto3.PasswordMessage{} },
}

func (sc *scriptConn) send(line string) error {
	line = strings.TrimSpace(line)
	if line == "" {
		return nil
	}
	name, arg, _ := strings.Cut(line, " ")
	if name == "raw" {
		b, err := strconv.Unquote(strings.TrimSpace(arg))
		if err != nil {
			return fmt.Errorf("raw wants a Go-quoted string: %w", err)
		}
		_, err = sc.nc.Write([]byte(b))
		return err
	}
	newMsg, ok := frontendMessages[name]
	if !ok {
		return fmt.Errorf("unknown message %q", name)
	}
	msg := newMsg()
	if arg != "" {
		if err := json.Unmarshal([]byte(arg), msg); err != nil {
			return err
		}
	}
	sc.fe.Send(msg)
	return sc.fe.Flush()
}

// until receives and prints messages until each type in want has arrived
// in turn. Types in ignore are received but not printed.
func (sc *scriptConn) until(t *testing.T, want, ignore []string) string {
	var out strings.Builder
	for _, w := range want {
		for {
			msg, err := sc.fe.Receive()
			if err != nil {
				// A reset is a close too: the server closed with input
				// unread.
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
					out.WriteString("EOF\n")
					if w != "EOF" {
						out.WriteString(fmt.Sprintf("(still waiting for %s)\n", w))
					}
				} else {
					out.WriteString(fmt.Sprintf("error: %v\n", err))
				}
				return out.String()
			}
			name := reflect.TypeOf(msg).Elem().Name()
			if !contains(ignore, name) {
				out.WriteString(formatMessage(t, msg))
				out.WriteByte('\n')
			}
			if name == w {
				break
			}
		}
	}
	return out.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// formatMessage prints msg as its type and its JSON form without the
// fields that hold zero values, so scripts show what matters. The cancel
// key is random and not printed.
func formatMessage(t *testing.T, msg pgproto3.BackendMessage) string {
	name := reflect.TypeOf(msg).Elem().Name()
	if name == "BackendKeyData" {
		return name
	}
	if dr, ok := msg.(*pgproto3.DataRow); ok {
		return name + " " + formatDataRow(t, dr)
	}
	if cd, ok := msg.(*pgproto3.CopyData); ok && utf8.Valid(cd.Data) {
		// A COPY line as text, which pgproto3 would print in hex.
		b, err := json.Marshal(map[string]string{"Data": string(cd.Data)})
		if err != nil {
			t.Fatal(err)
		}
		return name + " " + string(b)
	}
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	delete(v, "Type")
	dropZeros(v)
	if len(v) == 0 {
		return name
	}
	b, err = json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return name + " " + string(b)
}

func dropZeros(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch x := x.(type) {
			case nil:
				delete(v, k)
			case string:
				if x == "" {
					delete(v, k)
				}
			case float64:
				if x == 0 {
					delete(v, k)
				}
			case bool:
				if !x {
					delete(v, k)
				}
			default:
				if k != "Values" { // DataRow: "" is a value, not a zero
					dropZeros(x)
				}
			}
		}
	case []any:
		for _, x := range v {
			dropZeros(x)
		}
	}
}

// formatDataRow prints a DataRow's values as pgproto3's JSON does, except
// that a value is shown in hex whenever it is not printable UTF-8 (a
// binary int8 may well be all printable bytes but not UTF-8), so binary
// values are never printed lossily.
func formatDataRow(t *testing.T, dr *pgproto3.DataRow) string {
	vals := make([]map[string]string, len(dr.Values))
	for i, v := range dr.Values {
		switch {
		case v == nil:
		case utf8.Valid(v) && !strings.ContainsFunc(string(v), unicode.IsControl):
			vals[i] = map[string]string{"text": string(v)}
		default:
			vals[i] = map[string]string{"binary": hex.EncodeToString(v)}
		}
	}
	b, err := json.Marshal(map[string]any{"Values": vals})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
