package materialize

import (
	"testing"
	"time"
)

// TestSchedulerCompacts: on a healthy DB the scheduler grants Pebble's
// compactions: the tables flushed over one another into L0 are compacted
// away, as with Pebble's default scheduler.
func TestSchedulerCompacts(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	id := StoreID{"v", 1}
	for r := 0; r < 8; r++ {
		flushOver(t, db, id, r)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := db.pdb.Metrics()
		if m.Compact.Count > 0 && m.Levels[0].TablesCount < 4 {
			t.Logf("%d compactions, %d tables left in L0", m.Compact.Count, m.Levels[0].TablesCount)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("L0 not compacted within 30s: %d compactions, %d tables in L0", m.Compact.Count, m.Levels[0].TablesCount)
		}
		<-time.After(time.Millisecond) // poll interval, not a wait for the outcome
	}
}
