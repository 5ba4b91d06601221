package pgwire

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// FuzzConn feeds arbitrary bytes to a connection after a valid startup
// and checks that the connection loop neither panics nor hangs, and that
// the session it opened is closed. The committed corpus is in
// testdata/fuzz/FuzzConn; run with
//
//	go test ./pgwire -run '^$' -fuzz FuzzConn
func FuzzConn(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	b := newFakeBackend()
	b.noBlock = true // only the client's bytes may decide when a query ends
	b.started = make(chan string, 1<<16)
	s, err := NewServer(Options{
		Logger:         slog.New(slog.DiscardHandler),
		MaxMessageSize: 64 << 10,
		StartupTimeout: testTimeout,
	}, b)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	startup, err := (&pgproto3.StartupMessage{
		ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters:      map[string]string{"user": "fuzz", "database": "basin"},
	}).Encode(nil)
	if err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		for len(b.started) > 0 {
			<-b.started
		}
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.serveConn(server)
		}()
		// Drain the server's answers until it closes its end.
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			_, _ = io.Copy(io.Discard, client)
		}()
		// Write the input, then hang up: the write ends early if the
		// server closes first (a protocol violation), and the hang-up
		// ends whatever the input left running.
		_ = client.SetWriteDeadline(time.Now().Add(testTimeout))
		_, _ = client.Write(append(append([]byte{}, startup...), data...))
		_ = client.Close()

		select {
		case <-done:
		case <-time.After(testTimeout):
			t.Fatalf("connection did not end within %v of the client hanging up", testTimeout)
		}
		<-drained
		if n := b.open.Load(); n != 0 {
			t.Fatalf("%d sessions left open", n)
		}
	})
}

// fuzzSeeds are message sequences that reach each part of the connection
// loop; they are also committed under testdata/fuzz/FuzzConn.
func fuzzSeeds(t testing.TB) [][]byte {
	enc := func(msgs ...pgproto3.FrontendMessage) []byte {
		var b []byte
		for _, m := range msgs {
			var err error
			if b, err = m.Encode(b); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	return [][]byte{
		enc(&pgproto3.Query{String: "select 1"}, &pgproto3.Terminate{}),
		enc(&pgproto3.Query{String: "types"}, &pgproto3.Query{String: "boom"}, &pgproto3.Query{String: "panic"}),
		enc(&pgproto3.Query{String: "notice"}, &pgproto3.Query{String: "-- ping"}, &pgproto3.Query{String: "slow"}),
		enc(&pgproto3.Parse{Query: "select 1"}, &pgproto3.Bind{Parameters: [][]byte{[]byte("1"), nil}},
			&pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{}, &pgproto3.Query{String: "select 1"}),
		enc(&pgproto3.Parse{Name: "s", Query: "params int8 text timestamp", ParameterOIDs: []uint32{23}},
			&pgproto3.Describe{ObjectType: 'S', Name: "s"},
			&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s", ParameterFormatCodes: []int16{1, 0, 0},
				Parameters: [][]byte{{0, 0, 0, 7}, []byte("x"), []byte("2024-02-29 13:04:05.5+01")}, ResultFormatCodes: []int16{1}},
			&pgproto3.Parse{Name: "n", Query: "stream 10"}, &pgproto3.Bind{DestinationPortal: "q", PreparedStatement: "n"},
			&pgproto3.Execute{Portal: "q", MaxRows: 3}, &pgproto3.Describe{ObjectType: 'P', Name: "p"},
			&pgproto3.Execute{Portal: "p"}, &pgproto3.Flush{}, &pgproto3.Close{ObjectType: 'S', Name: "n"},
			&pgproto3.Execute{Portal: "q"}, &pgproto3.Sync{}, &pgproto3.Close{ObjectType: 'P', Name: "p"}, &pgproto3.Sync{}),
		enc(&pgproto3.CopyData{Data: []byte("a")}, &pgproto3.CopyDone{}, &pgproto3.Flush{}, &pgproto3.FunctionCall{Function: 1}),
		append(enc(&pgproto3.Query{String: "stream 100"}), 'Q', 0x7f, 0xff, 0xff, 0xff),
		[]byte("\xff\x00\x00\x00\x08garbage!"),
	}
}
