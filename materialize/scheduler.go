package materialize

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// scheduler is the DB's Pebble compaction scheduler. It runs Pebble's
// own policy, that of its default ConcurrencyLimitScheduler (as many
// compactions at once as the DB allows without permission, sampled when
// Pebble asks, when a compaction ends and every 100 ms), with one
// change: once the DB has failed (h.halted), it grants no compaction.
//
// Without that, a compaction that met a damaged file was retried at
// once, about a hundred times a second, each attempt reading the tables
// again and failing on the same block, until the DB was closed: Pebble
// keeps a failed compaction's inputs out of later picks for a while
// ("problem spans") but not inputs in L0, where damage in a flushed
// table sits. A failed DB takes no commits, so it needs no compactions;
// flushes (which Pebble does not schedule here) and reads go on.
//
// Pebble's default is not wrapped because it has no exported
// constructor that keeps its periodic granting. Locking, as Pebble
// requires: mu is ordered after the DB's mutexes (TrySchedule is called
// with them held), so mu is never held across GetWaitingCompaction or
// Schedule, which take them.
type scheduler struct {
	h  *health
	db pebble.DBForCompaction // set by Register, before any other call

	poke chan struct{} // wakes the granter (buffered, 1)
	stop chan struct{} // closed by Unregister
	done chan struct{} // closed when the granter returns

	mu struct {
		sync.Mutex
		running      int
		unregistered bool
		// granting serializes granting (from Done and the granter) and
		// lets Unregister wait for the one in progress.
		granting     bool
		grantingDone *sync.Cond
	}
}

var _ pebble.CompactionScheduler = (*scheduler)(nil)

func newScheduler(h *health) *scheduler {
	s := &scheduler{h: h, poke: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.grantingDone = sync.NewCond(&s.mu.Mutex)
	return s
}

// Register is called once by pebble.Open; it starts the granter, which
// Unregister (from DB.Close) stops.
func (s *scheduler) Register(_ int, db pebble.DBForCompaction) {
	s.db = db
	go s.granter()
}

func (s *scheduler) Unregister() {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.unregistered = true
	for s.mu.granting {
		s.mu.grantingDone.Wait()
	}
}

func (s *scheduler) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.unregistered || s.h.halted() {
		return false, nil
	}
	if s.db.GetAllowedWithoutPermission() > s.mu.running {
		s.mu.running++
		return true, s
	}
	return false, nil
}

func (s *scheduler) UpdateGetAllowedWithoutPermission() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// The scheduler is its own grant handle, as Pebble's is.

func (s *scheduler) Started()                                          {}
func (s *scheduler) MeasureCPU(pebble.CompactionGoroutineKind)         {}
func (s *scheduler) CumulativeStats(pebble.CompactionGrantHandleStats) {}

// Done is called when a granted compaction ends, failed or not.
func (s *scheduler) Done() {
	s.mu.Lock()
	s.mu.running--
	s.mu.Unlock()
	s.grant()
}

// grant starts waiting compactions while the DB allows more than run.
func (s *scheduler) grant() {
	s.mu.Lock()
	for s.mu.granting {
		s.mu.grantingDone.Wait()
	}
	if s.mu.unregistered || s.h.halted() {
		s.mu.Unlock()
		return
	}
	n := s.db.GetAllowedWithoutPermission() - s.mu.running
	if n <= 0 {
		s.mu.Unlock()
		return
	}
	s.mu.granting = true
	s.mu.Unlock()
	// GetWaitingCompaction only when a grant can follow, so that no
	// picked compaction is wasted.
	for ; n > 0 && !s.h.halted(); n-- {
		if waiting, _ := s.db.GetWaitingCompaction(); !waiting {
			break
		}
		if !s.db.Schedule(s) {
			break
		}
		s.mu.Lock()
		s.mu.running++
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.mu.granting = false
	s.mu.grantingDone.Broadcast()
	s.mu.Unlock()
}

// granter grants every 100 ms and when poked: the compactions allowed
// grow with flushes, which the scheduler does not otherwise see.
func (s *scheduler) granter() {
	defer close(s.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.poke:
		case <-s.stop:
			return
		}
		s.grant()
	}
}
