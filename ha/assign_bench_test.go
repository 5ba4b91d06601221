package ha

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/basindb/basin/materialize"
)

// BenchmarkAssign measures one assignment of a cluster that gains a cold
// node, with and without a previous map.
func BenchmarkAssign(b *testing.B) {
	for _, size := range []struct{ nodes, views, parts int }{{7, 20, 16}, {30, 100, 32}} {
		r := rand.New(rand.NewPCG(1, 1))
		c := &cluster{offsets: map[string]map[materialize.StoreID]int64{}}
		for i := range size.nodes {
			c.addNode(fmt.Sprintf("n%d", i))
		}
		for v := range size.views {
			for p := range size.parts {
				c.tasks = append(c.tasks, Task{ID: materialize.StoreID{View: fmt.Sprintf("view%d@%d", v, v), Partition: int32(p)}, Standbys: 1 + r.IntN(2), EndOffset: 100000})
			}
		}
		prev := Assign(c.input())
		c.prev = &prev
		c.catchUp()
		c.addNode("new")
		for _, withPrev := range []bool{true, false} {
			in := c.input()
			if !withPrev {
				in.Previous = nil
			}
			b.Run(fmt.Sprintf("nodes=%d/tasks=%d/previous=%v", len(c.nodes), len(c.tasks), withPrev), func(b *testing.B) {
				for b.Loop() {
					Assign(in)
				}
			})
		}
	}
}
