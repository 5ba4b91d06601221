package materialize

import (
	"fmt"
	"testing"
	"time"

	"github.com/basindb/basin/internal/poll"
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
	poll.Until(t, 30*time.Second, func() error {
		m := db.pdb.Metrics()
		if m.Compact.Count > 0 && m.Levels[0].TablesCount < 4 {
			t.Logf("%d compactions, %d tables left in L0", m.Compact.Count, m.Levels[0].TablesCount)
			return nil
		}
		return fmt.Errorf("L0 not compacted: %d compactions, %d tables in L0", m.Compact.Count, m.Levels[0].TablesCount)
	})
}
