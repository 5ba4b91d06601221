package ha

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lt0 is the origin of the liveness tests' clocks; steps give times as
// milliseconds after it.
var lt0 = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return lt0.Add(time.Duration(n) * time.Millisecond) }

func TestLivenessConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  LivenessConfig
		want LivenessConfig
		err  string
	}{
		{name: "defaults", want: LivenessConfig{HeartbeatInterval: 100 * time.Millisecond, Window: time.Second,
			MissedThreshold: 5, ReceivedThreshold: 2, UnknownGrace: time.Second}},
		{name: "kept", cfg: LivenessConfig{HeartbeatInterval: time.Second, Window: 10 * time.Second, MissedThreshold: 3, ReceivedThreshold: 4, UnknownGrace: 5 * time.Second},
			want: LivenessConfig{HeartbeatInterval: time.Second, Window: 10 * time.Second, MissedThreshold: 3, ReceivedThreshold: 4, UnknownGrace: 5 * time.Second}},
		// --heartbeat-interval 1s: the default window widens with it.
		{name: "long interval", cfg: LivenessConfig{HeartbeatInterval: time.Second}, want: LivenessConfig{HeartbeatInterval: time.Second,
			Window: 10 * time.Second, MissedThreshold: 5, ReceivedThreshold: 2, UnknownGrace: time.Second}},
		{name: "negative interval", cfg: LivenessConfig{HeartbeatInterval: -1}, err: "heartbeat interval -1ns is negative"},
		{name: "negative window", cfg: LivenessConfig{Window: -time.Second}, err: "heartbeat window -1s is negative"},
		{name: "negative missed", cfg: LivenessConfig{MissedThreshold: -1}, err: "missed-heartbeat threshold -1 is negative"},
		{name: "negative received", cfg: LivenessConfig{ReceivedThreshold: -2}, err: "received-heartbeat threshold -2 is negative"},
		{name: "negative grace", cfg: LivenessConfig{UnknownGrace: -time.Millisecond}, err: "unknown-node grace -1ms is negative"},
		{name: "window too small", cfg: LivenessConfig{Window: 150 * time.Millisecond},
			err: "heartbeat window 150ms cannot hold 2 heartbeats 100ms apart (need at least 200ms)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			err := c.Validate()
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrInvalidConfig) || !strings.HasSuffix(err.Error(), tc.err) {
					t.Fatalf("Validate() = %v, want ErrInvalidConfig ending in %q", err, tc.err)
				}
				if _, err := NewLiveness(tc.cfg); err == nil {
					t.Fatal("NewLiveness accepted an invalid config")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c != tc.want {
				t.Fatalf("Validate() filled in %+v, want %+v", c, tc.want)
			}
		})
	}
}

// TestLivenessScenarios runs scripts of steps against one peer, n1. Times
// are milliseconds after lt0:
//
//	add T            Add(n1, T)
//	hb T [T2 STEP]   Observe(n1, T) must count; with T2 and STEP, every
//	                 STEP ms from T to T2
//	ignored T        Observe(n1, T) must be ignored
//	alive T          Alive(n1, T) and a zero DownSince
//	down T since S   not alive at T, down since S
//	received T N     N heartbeats in the window ending at T
func TestLivenessScenarios(t *testing.T) {
	custom := LivenessConfig{HeartbeatInterval: 100 * time.Millisecond, Window: 300 * time.Millisecond, MissedThreshold: 5, ReceivedThreshold: 3}
	for _, tc := range []struct {
		name  string
		cfg   LivenessConfig
		steps []string
	}{
		{name: "steady heartbeats keep a peer alive", steps: []string{
			"hb 0 1000 100", "alive 1000", "alive 1499", "down 1500 since 1500", "down 5000 since 1500"}},
		{name: "down after exactly MissedThreshold intervals", steps: []string{
			"hb 0", "alive 0", "alive 499", "down 500 since 500", "down 999 since 500"}},
		{name: "jitter under the threshold is not a failure", steps: []string{
			"hb 0", "hb 499", "hb 998", "hb 1497", "alive 1996", "down 1997 since 1997"}},
		{name: "one heartbeat does not revive", steps: []string{
			"hb 0", "down 600 since 500", "hb 700", "down 700 since 500", "down 750 since 500", "down 1300 since 500"}},
		{name: "ReceivedThreshold heartbeats revive", steps: []string{
			"hb 0", "down 650 since 500", "hb 700", "hb 800", "alive 800", "alive 1299", "down 1300 since 1300"}},
		{name: "revived peer fails again with a new DownSince", steps: []string{
			"hb 0", "hb 700", "hb 800", "down 1300 since 1300", "hb 2000", "hb 2050", "alive 2050", "down 2550 since 2550"}},
		{name: "flapping stays down with its first DownSince", steps: []string{
			// 600 and 1200 are within one window, but the node went
			// silent for 600ms in between: the count starts over.
			"hb 0", "hb 600", "down 1100 since 500", "hb 1200", "down 1200 since 500",
			"hb 1900", "down 1900 since 500", "hb 1950", "alive 1950"}},
		{name: "recovery heartbeats must fit in one window", cfg: custom, steps: []string{
			"hb 0", "down 500 since 500", "hb 600", "hb 800", "hb 1000", "down 1000 since 500",
			"received 1000 2", "hb 1100", "down 1100 since 500", "hb 1150", "alive 1150"}},
		{name: "unknown peer is alive for the grace period", steps: []string{
			"add 0", "alive 0", "alive 999", "down 1000 since 1000", "down 3000 since 1000",
			"hb 3000", "down 3000 since 1000", "hb 3100", "alive 3100"}},
		{name: "unknown peer heard within the grace period", steps: []string{
			"add 0", "hb 300", "alive 300", "alive 799", "down 800 since 800"}},
		{name: "heartbeat before the assignment names the peer", steps: []string{
			"hb 0", "add 200", "alive 499", "down 500 since 500"}},
		{name: "a later Add does not reset the history", steps: []string{
			"add 0", "down 1500 since 1000", "add 1500", "down 1600 since 1000"}},
		{name: "clock going back: older heartbeats are ignored", steps: []string{
			"hb 1000", "ignored 400", "ignored 1000", "ignored 999", "alive 1499", "down 1500 since 1500"}},
		{name: "ignored heartbeats do not count toward recovery", steps: []string{
			"hb 0", "down 600 since 500", "hb 700", "ignored 650", "ignored 700", "down 720 since 500", "hb 740", "alive 740"}},
		{name: "a query before the last heartbeat is answered as of it", steps: []string{
			"hb 0", "hb 100", "alive 50", "alive -1000", "hb 2000", "down 1000 since 600", "down 2000 since 600"}},
		{name: "received counts the window ending at the time asked", steps: []string{
			"hb 0 900 100", "received 900 10", "received 950 10", "received 1000 9", "received 1400 5",
			"received 2000 0", "received 100 10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLiveness(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, step := range tc.steps {
				runLivenessStep(t, l, "n1", step)
			}
		})
	}
}

func runLivenessStep(t *testing.T, l *Liveness, node, step string) {
	t.Helper()
	f := strings.Fields(step)
	num := func(i int) int {
		t.Helper()
		if i >= len(f) {
			t.Fatalf("step %q: missing field %d", step, i)
		}
		n, err := strconv.Atoi(f[i])
		if err != nil {
			t.Fatalf("step %q: %v", step, err)
		}
		return n
	}
	switch f[0] {
	case "add":
		l.Add(node, ms(num(1)))
	case "hb":
		from, to, step := num(1), num(1), 1
		if len(f) > 2 {
			to, step = num(2), num(3)
		}
		for at := from; at <= to; at += step {
			if !l.Observe(node, ms(at)) {
				t.Fatalf("heartbeat at %d ignored", at)
			}
		}
	case "ignored":
		if l.Observe(node, ms(num(1))) {
			t.Fatalf("heartbeat at %d counted, want ignored", num(1))
		}
	case "alive":
		nl, _ := l.Get(node, ms(num(1)))
		if !nl.Alive || !nl.DownSince.IsZero() || !l.Alive(node, ms(num(1))) {
			t.Fatalf("%s: got %+v, want alive", step, nl)
		}
	case "down":
		nl, _ := l.Get(node, ms(num(1)))
		if f[2] != "since" {
			t.Fatalf("step %q: want 'down T since S'", step)
		}
		if nl.Alive || !nl.DownSince.Equal(ms(num(3))) || l.Alive(node, ms(num(1))) {
			t.Fatalf("%s: got alive=%v down since %v, want down since %v", step, nl.Alive, nl.DownSince, ms(num(3)))
		}
	case "received":
		if nl, _ := l.Get(node, ms(num(1))); nl.Received != num(2) {
			t.Fatalf("%s: received %d", step, nl.Received)
		}
	default:
		t.Fatalf("unknown step %q", step)
	}
}

// TestLivenessDeadWithinOneSecond checks the bar the docs set (a dead
// node counts as down within a second) with the defaults:
// whenever a node stops, every query from one second after its last
// heartbeat on says it is down.
func TestLivenessDeadWithinOneSecond(t *testing.T) {
	for _, last := range []int{0, 37, 100, 4999} {
		l, err := NewLiveness(LivenessConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for at := last - 1000; at <= last; at += 100 {
			l.Observe("n1", ms(at))
		}
		if !l.Alive("n1", ms(last).Add(500*time.Millisecond-time.Nanosecond)) {
			t.Errorf("last heartbeat at %d: down before 500ms of silence", last)
		}
		for _, after := range []time.Duration{500 * time.Millisecond, 999 * time.Millisecond, time.Second} {
			nl, _ := l.Get("n1", ms(last).Add(after))
			if nl.Alive || nl.DownSince.After(ms(last).Add(time.Second)) {
				t.Errorf("last heartbeat at %d: %v later: %+v, want down since at most 1s after it", last, after, nl)
			}
		}
	}
}

func TestLivenessUntrackedAndForget(t *testing.T) {
	l, err := NewLiveness(LivenessConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if nl, tracked := l.Get("ghost", ms(0)); tracked || !nl.Alive || !l.Alive("ghost", ms(1e6)) {
		t.Fatalf("untracked node: %+v tracked=%v, want alive and untracked", nl, tracked)
	}
	if l.Observe("n1", time.Time{}) {
		t.Fatal("heartbeat at the zero time counted")
	}
	if _, tracked := l.Get("n1", ms(0)); tracked {
		t.Fatal("heartbeat at the zero time started tracking")
	}
	l.Observe("n1", ms(0))
	if l.Alive("n1", ms(600)) {
		t.Fatal("n1 alive after 600ms of silence")
	}
	l.Forget("n1")
	if _, tracked := l.Get("n1", ms(600)); tracked || !l.Alive("n1", ms(600)) {
		t.Fatal("forgotten node still tracked")
	}
	l.Add("n1", ms(600))
	if !l.Alive("n1", ms(1599)) || l.Alive("n1", ms(1600)) {
		t.Fatal("re-added node does not get a fresh grace period")
	}
}

func TestLivenessStatus(t *testing.T) {
	l, err := NewLiveness(LivenessConfig{})
	if err != nil {
		t.Fatal(err)
	}
	l.Add("n1", ms(0))
	l.Add("n2", ms(0))
	l.Add("n3", ms(0))
	for at := 0; at <= 1000; at += 100 {
		l.Observe("n1", ms(at))
	}
	l.Observe("n2", ms(200))
	got := l.Status(ms(1000))
	want := map[string]NodeLiveness{
		"n1": {Alive: true, LastHeartbeat: ms(1000), Received: 10},
		"n2": {Alive: false, LastHeartbeat: ms(200), DownSince: ms(700), Received: 1},
		"n3": {Alive: false, DownSince: ms(1000)},
	}
	if len(got) != len(want) {
		t.Fatalf("Status = %v, want %v", got, want)
	}
	for node, w := range want {
		g := got[node]
		if g.Alive != w.Alive || !g.LastHeartbeat.Equal(w.LastHeartbeat) || !g.DownSince.Equal(w.DownSince) || g.Received != w.Received {
			t.Errorf("Status[%s] = %+v, want %+v", node, g, w)
		}
	}
	if l.Config().MissedThreshold != DefaultMissedThreshold {
		t.Fatalf("Config() = %+v, want defaults filled in", l.Config())
	}
}

// refLiveness recomputes a peer's liveness at now from scratch, from the
// whole list of heartbeats that counted (ascending), without the
// tracker's pruning or incremental state: the model the tracker must
// agree with.
func refLiveness(cfg LivenessConfig, added time.Time, hbs []time.Time, now time.Time) (bool, time.Time) {
	missed := time.Duration(cfg.MissedThreshold) * cfg.HeartbeatInterval
	if len(hbs) > 0 && now.Before(hbs[len(hbs)-1]) {
		now = hbs[len(hbs)-1]
	}
	silentSince := func(i int) (time.Time, time.Duration) { // silence before heartbeat i
		if i == 0 {
			return added, cfg.UnknownGrace
		}
		return hbs[i-1], missed
	}
	down, since := false, time.Time{}
	streakStart := -1
	for i, h := range hbs {
		from, limit := silentSince(i)
		if !down && h.Sub(from) >= limit {
			down, since, streakStart = true, from.Add(limit), -1
		} else if down && i > 0 && h.Sub(hbs[i-1]) >= missed {
			streakStart = -1
		}
		if down && streakStart < 0 {
			streakStart = i
		}
		if down {
			n := 0
			for j := streakStart; j <= i; j++ {
				if hbs[j].After(h.Add(-cfg.Window)) {
					n++
				}
			}
			if n >= cfg.ReceivedThreshold {
				down, since = false, time.Time{}
			}
		}
	}
	if !down {
		if from, limit := silentSince(len(hbs)); now.Sub(from) >= limit {
			down, since = true, from.Add(limit)
		}
	}
	return !down, since
}

// TestLivenessMatchesReference feeds random heartbeat histories (steady
// stretches, stalls, bursts, clocks going back), interleaved with
// queries, to the tracker and checks every answer against refLiveness.
func TestLivenessMatchesReference(t *testing.T) {
	var alives, downs, revivals int
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		cfg := LivenessConfig{
			HeartbeatInterval: time.Duration(50+r.IntN(100)) * time.Millisecond,
			MissedThreshold:   1 + r.IntN(5),
			ReceivedThreshold: 1 + r.IntN(3),
		}
		cfg.Window = time.Duration(cfg.ReceivedThreshold+r.IntN(10)) * cfg.HeartbeatInterval
		cfg.UnknownGrace = time.Duration(r.IntN(2000)) * time.Millisecond
		l, err := NewLiveness(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg = l.Config()
		// added is when the tracker learned of the peer: the Add, else
		// the first heartbeat.
		var added time.Time
		if r.IntN(4) > 0 {
			added = ms(0)
			l.Add("n", added)
		}
		var hbs []time.Time
		clock := 0
		wasDown := false
		for range 200 {
			switch k := r.IntN(10); {
			case k < 6: // a heartbeat after a gap: usually one interval, sometimes a stall
				gap := int(cfg.HeartbeatInterval/time.Millisecond) + r.IntN(40) - 20
				if r.IntN(8) == 0 {
					gap = r.IntN(3000)
				}
				clock += gap
				at := ms(clock)
				want := len(hbs) == 0 || at.After(hbs[len(hbs)-1])
				if got := l.Observe("n", at); got != want {
					t.Fatalf("seed %d: heartbeat at %d counted=%v, want %v", seed, clock, got, want)
				}
				if want {
					hbs = append(hbs, at)
				}
				if added.IsZero() {
					added = at
				}
			case k < 7: // a heartbeat stamped at or before the last one
				if len(hbs) > 0 && l.Observe("n", hbs[len(hbs)-1].Add(-time.Duration(r.IntN(500))*time.Millisecond)) {
					t.Fatalf("seed %d: heartbeat in the past counted", seed)
				}
			default: // a query, sometimes before the last heartbeat
				now := ms(clock + r.IntN(3000) - 500)
				nl, tracked := l.Get("n", now)
				if tracked != !added.IsZero() {
					t.Fatalf("seed %d: tracked=%v, added %v", seed, tracked, added)
				}
				if !tracked {
					continue
				}
				alive, since := refLiveness(cfg, added, hbs, now)
				if nl.Alive != alive || !nl.DownSince.Equal(since) {
					t.Fatalf("seed %d, cfg %+v, added %v, heartbeats %v, at %v: tracker says alive=%v since %v, reference alive=%v since %v",
						seed, cfg, added, fmtMs(hbs), now.Sub(lt0), nl.Alive, nl.DownSince, alive, since)
				}
				if nl.Alive != nl.DownSince.IsZero() {
					t.Fatalf("seed %d: alive=%v with DownSince %v", seed, nl.Alive, nl.DownSince)
				}
				if nl.Alive {
					alives++
					if wasDown {
						revivals++
					}
				} else {
					downs++
				}
				wasDown = !nl.Alive
			}
		}
	}
	// The histories must exercise every rule, not just agree vacuously.
	if alives < 1000 || downs < 1000 || revivals < 200 {
		t.Fatalf("weak coverage: %d alive answers, %d down, %d revivals", alives, downs, revivals)
	}
	t.Logf("%d alive answers, %d down, %d revivals", alives, downs, revivals)
}

func fmtMs(ts []time.Time) string {
	var sb strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&sb, "%d ", t.Sub(lt0).Milliseconds())
	}
	return sb.String()
}

// TestLivenessConcurrent runs heartbeats, queries and membership changes
// from many goroutines; run with -race.
func TestLivenessConcurrent(t *testing.T) {
	l, err := NewLiveness(LivenessConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		node := "n" + strconv.Itoa(i)
		wg.Add(2)
		go func() {
			defer wg.Done()
			l.Add(node, ms(0))
			for at := 0; at < 2000; at += 10 {
				l.Observe(node, ms(at))
			}
		}()
		go func() {
			defer wg.Done()
			for at := 0; at < 2000; at += 10 {
				l.Alive(node, ms(at))
				l.Status(ms(at))
				if at%500 == 0 {
					l.Forget("temp")
					l.Add("temp", ms(at))
				}
			}
		}()
	}
	wg.Wait()
	for i := range 8 {
		if nl, _ := l.Get("n"+strconv.Itoa(i), ms(1990)); !nl.Alive || !nl.LastHeartbeat.Equal(ms(1990)) {
			t.Fatalf("n%d: %+v", i, nl)
		}
	}
}
