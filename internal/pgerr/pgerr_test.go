package pgerr

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

func TestCodes(t *testing.T) {
	for _, c := range []struct {
		code        Code
		want, class string
		name        string
	}{
		{SyntaxError, "42601", "42", "SyntaxError"},
		{UndefinedTable, "42P01", "42", "UndefinedTable"},
		{QueryCanceled, "57014", "57", "QueryCanceled"},
		{TooManyConnections, "53300", "53", "TooManyConnections"},
		{InternalError, "XX000", "XX", "InternalError"},
	} {
		if string(c.code) != c.want || c.code.Class() != c.class || c.code.Name() != c.name {
			t.Errorf("%s: got %s class %s name %s", c.want, c.code, c.code.Class(), c.code.Name())
		}
	}
	if len(codeNames) < 200 {
		t.Errorf("only %d codes generated", len(codeNames))
	}
}

func TestCodeOf(t *testing.T) {
	e := New(UndefinedColumn, "column %q does not exist", "x").WithPosition(8).WithHint("h")
	wrapped := fmt.Errorf("planning: %w", e)
	if CodeOf(wrapped) != UndefinedColumn {
		t.Fatalf("CodeOf(wrapped) = %s", CodeOf(wrapped))
	}
	if pe, ok := As(wrapped); !ok || pe.Position != 8 || pe.Hint != "h" {
		t.Fatalf("As(wrapped) = %+v, %v", pe, ok)
	}
	if CodeOf(errors.New("boom")) != InternalError {
		t.Fatal("an uncoded error must be XX000")
	}
	if Wrap(errors.New("bad"), DataException).Code != DataException || Wrap(wrapped, DataException).Code != UndefinedColumn {
		t.Fatal("Wrap must keep an existing code and add a missing one")
	}
}

// TestFromDiskFull: a write that failed for lack of space, however
// wrapped, becomes 53100 naming the file it was writing; other errors
// are not disk full.
func TestFromDiskFull(t *testing.T) {
	enospc := fmt.Errorf("persist batch write: %w", &fs.PathError{Op: "write", Path: "/data/broker/orders-0/00000000000000000000.log", Err: syscall.ENOSPC})
	e, ok := FromDiskFull(enospc, "topic orders")
	if !ok || e.Code != DiskFull || !strings.Contains(e.Message, "/data/broker/orders-0/00000000000000000000.log") ||
		!strings.Contains(e.Message, "no space left on device") {
		t.Errorf("FromDiskFull(%v) = %+v, %v: want 53100 naming the file", enospc, e, ok)
	}
	bare := fmt.Errorf("pebble: %w", syscall.ENOSPC)
	if e, ok := FromDiskFull(bare, "store orders_by_region/3"); !ok || !strings.Contains(e.Message, "store orders_by_region/3") {
		t.Errorf("FromDiskFull(%v) = %+v, %v: want 53100 naming the fallback", bare, e, ok)
	}
	if e, ok := FromDiskFull(fmt.Errorf("x: %w", syscall.EDQUOT), "f"); !ok || !strings.Contains(e.Message, "quota") {
		t.Errorf("EDQUOT: %+v, %v", e, ok)
	}
	if _, ok := FromDiskFull(&fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, "f"); ok {
		t.Error("EACCES taken for disk full")
	}
}
