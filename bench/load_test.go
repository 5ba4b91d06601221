//go:build bench

package bench

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A pacedLoad produces rate records a second through cl, the i-th made by
// record(i), in slices of 10 ms, from its start until stop.
type pacedLoad struct {
	start time.Time
	done  chan struct{}
	wg    sync.WaitGroup
	n     int64 // records produced; read after stop
}

func startPacedLoad(ctx context.Context, cl *kgo.Client, rate int, record func(i int64) *kgo.Record) *pacedLoad {
	l := &pacedLoad{start: time.Now(), done: make(chan struct{})}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-l.done:
				return
			case <-tick.C:
			}
			want := int64(time.Since(l.start).Seconds() * float64(rate))
			for ; l.n < want; l.n++ {
				cl.Produce(ctx, record(l.n), nil)
			}
		}
	}()
	return l
}

// stop ends the load and returns how many records it produced.
func (l *pacedLoad) stop() int64 {
	close(l.done)
	l.wg.Wait()
	return l.n
}
