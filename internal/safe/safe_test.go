package safe

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func explode() { panic("boom") }

func TestRecoverKeepsThePanickingStack(t *testing.T) {
	err := Call(func() error { explode(); return nil })
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Call returned %v, not a *PanicError", err)
	}
	if pe.Value != "boom" || err.Error() != "panic: boom" {
		t.Errorf("value %v, message %q", pe.Value, err)
	}
	if !strings.Contains(string(pe.Stack), "safe.explode") {
		t.Errorf("the stack does not name the panicking function:\n%s", pe.Stack)
	}
	if err := Call(func() error { return io.EOF }); err != io.EOF {
		t.Errorf("Call changed a returned error: %v", err)
	}
}

func TestPanicErrorUnwrapsErrors(t *testing.T) {
	err := Call(func() error {
		var m map[string]int
		//lint:ignore SA5000 the test needs a runtime error
		m["x"] = 1
		return nil
	})
	if !IsPanic(err) {
		t.Fatalf("%v is not a panic", err)
	}
	var re interface{ RuntimeError() }
	if !errors.As(err, &re) {
		t.Errorf("%v does not unwrap to the runtime error", err)
	}
}

func TestDoLogsTheStack(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	if err := Do(log, "loop panicked", explode); !IsPanic(err) {
		t.Fatalf("Do returned %v", err)
	}
	out := buf.String()
	if !strings.Contains(out, "loop panicked") || !strings.Contains(out, "stack=") || !strings.Contains(out, "safe.explode") {
		t.Errorf("log lacks the message or the panic's stack:\n%s", out)
	}
	if err := Do(log, "x", func() {}); err != nil {
		t.Errorf("Do of a function that returned: %v", err)
	}
}

func TestRestart(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	runs := 0
	Restart(context.Background(), log, "loop panicked", 0, func() {
		if runs++; runs < 3 {
			explode()
		}
	})
	if runs != 3 || strings.Count(buf.String(), "loop panicked") != 2 {
		t.Errorf("%d runs, log:\n%s", runs, buf.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	runs = 0
	Restart(ctx, log, "loop panicked", time.Hour, func() { runs++; explode() })
	if runs != 1 {
		t.Errorf("a cancelled Restart ran f %d times", runs)
	}
}

func TestFault(t *testing.T) {
	const place = "test.place"
	if err := Call(func() error { Fault(place); return nil }); err != nil {
		t.Fatalf("an unarmed fault fired: %v", err)
	}
	t.Run("armed", func(t *testing.T) {
		SetFault(t, place, 2)
		for i := range 3 {
			err := Call(func() error { Fault(place); return nil })
			if fired := IsPanic(err); fired != (i < 2) {
				t.Errorf("pass %d: fired %v", i, fired)
			}
		}
		if FaultsLeft(place) != 0 {
			t.Errorf("%d faults left", FaultsLeft(place))
		}
		SetFault(t, place, 1)
		if FaultsLeft(place) != 1 {
			t.Errorf("re-armed: %d faults left", FaultsLeft(place))
		}
	})
	if faults.Load() != nil {
		t.Error("faults still armed after the test that armed them")
	}
}
