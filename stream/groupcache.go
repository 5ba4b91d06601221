package stream

// The group cache of a view task: committed aggregate states kept in
// memory so that a record whose group has not changed since need not
// read it from the store (see groupCache).

// groupCacheSize bounds a view task's group cache: each of its two
// generations holds up to this many groups. A group takes some 100 bytes
// plus its state's, so a task's cache stays within some 10 MiB.
const groupCacheSize = 1 << 15

// groupCache holds the committed state of the groups a view task changed
// last, so that changing them again needs no read of the store, which
// otherwise is most of the cost of a record whose group has not changed
// yet in its transaction. It holds only what the store holds: a state
// goes in after its transaction has committed to the store, and the
// task, which is the store's one writer while it runs, starts each run
// with an empty cache. It is bounded: groups go to the current
// generation, and when that is full it becomes the previous one,
// dropping the one before; a group found in the previous generation
// moves to the current one. So the groups kept are the most recently
// used, give or take a generation.
type groupCache struct {
	size      int // groups per generation; 0 means groupCacheSize
	cur, prev map[string]*cachedGroup
	// complete is set while the cache holds every group of the store:
	// from a run that starts with an empty store (a new view taking in
	// its input) until a group is dropped. A group it does not hold then
	// has no state yet, and is not looked for in the store.
	complete bool
}

// cachedGroup is the committed state of a group. A transaction changing
// the group keeps it to update it after committing, without looking the
// group up again.
type cachedGroup struct {
	state []any
	// visible is whether the group is a row of the view (not hidden by
	// HAVING, EMIT FINAL or a failed expression).
	visible bool
}

// get returns the cached group of key, nil if there is none.
func (c *groupCache) get(key string) *cachedGroup {
	if g, ok := c.cur[key]; ok {
		return g
	}
	g, ok := c.prev[key]
	if ok {
		delete(c.prev, key)
		c.insert(key, g)
	}
	return g
}

// put sets the committed state of key, which the cache now owns; g is
// what get returned for key before the transaction. Should g have been
// dropped since, the state is not cached: only a later get is the worse
// for it.
func (c *groupCache) put(key string, g *cachedGroup, st []any, visible bool) {
	if g != nil {
		g.state, g.visible = st, visible
		return
	}
	c.insert(key, &cachedGroup{state: st, visible: visible})
}

// insert adds key, which the cache does not hold, to the current
// generation.
func (c *groupCache) insert(key string, g *cachedGroup) {
	size := c.size
	if size == 0 {
		size = groupCacheSize
	}
	if len(c.cur) >= size {
		c.complete = c.complete && len(c.prev) == 0
		clear(c.prev)
		c.prev, c.cur = c.cur, c.prev
	}
	if c.cur == nil {
		c.cur = make(map[string]*cachedGroup)
	}
	c.cur[key] = g
}

func (c *groupCache) remove(key string) {
	delete(c.cur, key)
	delete(c.prev, key)
}
