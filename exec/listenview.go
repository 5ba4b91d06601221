package exec

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/materialize"
	"github.com/basindb/basin/push"
	"github.com/basindb/basin/serde"
)

// LISTEN on a view's name.
//
// While a session of the node listens on a channel named as a view or
// stream, a feed (one per channel, shared by its listeners) follows the
// relation's changes from now on (push.Subscription, no snapshot) and
// notifies the channel of each: the payload is the JSON object of the
// row's columns with _op and _position, so a client's notification API
// is a change stream. A payload Postgres would refuse (8000 bytes or
// more) is sent as the row's key columns, _op, _position and
// "_truncated": true: the subscriber reads the row by its key. The feed
// stops when the channel's last listener does, or the relation is
// dropped; a relation created while its name has listeners starts one
// (RelationsChanged).

// viewFeeds are the running feeds of an Engine, by channel.
type viewFeeds struct {
	mu    sync.Mutex
	ctx   context.Context
	stop  context.CancelFunc
	feeds map[string]viewFeed
	wg    sync.WaitGroup
}

// viewFeed is one running feed: of the relation created by the command
// at version, stopped by stop.
type viewFeed struct {
	version int64
	stop    context.CancelFunc
}

// NotifyViews makes LISTEN on a view's or stream's name a subscription
// to its changes (see above). Close stops the feeds.
func (e *Engine) NotifyViews() {
	e.feeds.ctx, e.feeds.stop = context.WithCancel(context.Background())
	e.feeds.feeds = map[string]viewFeed{}
	e.OnListen(e.listening)
}

// Close stops what the engine runs besides its sessions' statements.
func (e *Engine) Close() {
	if e.feeds.stop != nil {
		e.feeds.stop()
	}
	e.feeds.wg.Wait()
	e.subscriptions().Close() // a later subscription reads on its own
}

// listening is the hook of a channel's first listener and last.
func (e *Engine) listening(channel string, on bool) {
	f := &e.feeds
	f.mu.Lock()
	defer f.mu.Unlock()
	if !on {
		if feed, ok := f.feeds[channel]; ok {
			feed.stop()
			delete(f.feeds, channel)
		}
		return
	}
	if rel, err := e.Catalog.Resolve(channel); err == nil {
		e.startFeedLocked(channel, rel, false)
	}
}

// RelationsChanged tells the engine that the catalog created or dropped
// a relation (either may be nil): a view's or stream's name that has
// listeners gets a feed when it is created, and its feed stops when it
// is dropped (the channel's listeners stay, as on any channel).
func (e *Engine) RelationsChanged(created, dropped *catalog.Relation) {
	f := &e.feeds
	if f.feeds == nil {
		return // NotifyViews was not called
	}
	// The hub's hook lock orders this with LISTEN and UNLISTEN.
	e.notify.hookMu.Lock()
	defer e.notify.hookMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if dropped != nil {
		if feed, ok := f.feeds[dropped.Name]; ok && feed.version == dropped.Version {
			feed.stop()
			delete(f.feeds, dropped.Name)
		}
	}
	if created != nil {
		e.notify.mu.Lock()
		listened := len(e.notify.mu.channels[created.Name]) > 0
		e.notify.mu.Unlock()
		if _, running := f.feeds[created.Name]; listened && !running {
			e.startFeedLocked(created.Name, created, true)
		}
	}
}

// startFeedLocked starts the feed of channel, named as rel, unless rel is
// not a view or stream. A view just created (created) is followed from
// its first change; otherwise the feed starts now.
func (e *Engine) startFeedLocked(channel string, rel *catalog.Relation, created bool) {
	f := &e.feeds
	if rel.Kind != catalog.KindView && rel.Kind != catalog.KindStream || f.ctx.Err() != nil {
		return // a channel like any other
	}
	ctx, stop := context.WithCancel(f.ctx)
	var sub *push.Subscription
	var at string
	if created && rel.Kind == catalog.KindView {
		// Its changelog may not be there yet: the feed starts at its
		// beginning when it is, in its own goroutine.
		start := make(map[int32]int64, rel.Partitions)
		for p := range rel.Partitions {
			start[p] = 0
		}
		at = materialize.Position{rel.ChangelogTopic(e.Cluster): start}.String()
	} else {
		// The subscription starts now, so that a change committed after
		// the LISTEN is notified.
		sctx, cancel := context.WithTimeout(ctx, feedStart)
		var err error
		sub, err = e.subscriptions().Subscribe(sctx, rel, push.Options{})
		cancel()
		if err != nil {
			e.Logger.Warn("LISTEN feed of a view did not start; starting it again", "channel", channel, "err", err)
		}
	}
	f.feeds[channel] = viewFeed{version: rel.Version, stop: stop}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		e.feed(ctx, channel, rel, sub, at)
	}()
}

// feedStart bounds how long a LISTEN waits for its feed to start.
const feedStart = 10 * time.Second

// feedRetry is how long a feed whose subscription failed waits before
// it starts again.
const feedRetry = time.Second

// feed notifies channel of rel's changes until ctx ends, from sub, or a
// subscription AS OF at when sub is nil. A subscription
// that fails (the changelog cannot be read for a while) starts again
// after the position of its last change, so none is lost or repeated.
func (e *Engine) feed(ctx context.Context, channel string, rel *catalog.Relation, sub *push.Subscription, at string) {
	// at is the position of the last change notified, or where the feed
	// starts ("": now).
	for ctx.Err() == nil {
		err := e.feedFrom(ctx, channel, rel, sub, &at)
		sub = nil
		if ctx.Err() != nil {
			return
		}
		e.Logger.Warn("LISTEN feed of a view failed; starting it again", "channel", channel, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(feedRetry):
		}
	}
}

// feedFrom notifies channel of the changes of sub, or, when sub is nil,
// of a new subscription after position at (now, when at is "").
func (e *Engine) feedFrom(ctx context.Context, channel string, rel *catalog.Relation, sub *push.Subscription, at *string) error {
	if sub == nil {
		opts := push.Options{}
		if *at != "" {
			pos, err := materialize.ParsePosition(*at)
			if err != nil {
				return err
			}
			opts.AsOf = pos
		}
		var err error
		if sub, err = e.subscriptions().Subscribe(ctx, rel, opts); err != nil {
			return err
		}
	}
	defer sub.Close()
	cols := sub.Columns()
	keys := rel.Schema.KeyIndexes()
	var rows [][]any
	var err error
	for {
		rows, _, err = sub.Next(ctx, rows[:0], 256, waitForever)
		for _, r := range rows {
			b, err := serde.EncodeJSONObject(cols, r)
			if err != nil {
				return err
			}
			if len(b) >= maxNotifyPayload {
				b, err = truncatedPayload(rel, cols, keys, r)
				if err != nil {
					return err
				}
			}
			e.Notify(channel, string(b), 0)
			*at = r[len(r)-1].(string)
		}
		if err != nil {
			return err
		}
	}
}

// truncatedPayload is the payload of row r (of columns cols, the
// subscription's) too large to notify: its key columns (keys, indexes of
// rel's columns), _op and _position, and "_truncated": true.
func truncatedPayload(rel *catalog.Relation, cols []catalog.Column, keys []int, r []any) ([]byte, error) {
	var kc []catalog.Column
	var kv []any
	for i, c := range cols[:len(cols)-3] {
		for _, k := range keys {
			if strings.EqualFold(rel.Schema.Columns[k].Name, c.Name) {
				kc, kv = append(kc, c), append(kv, r[i])
			}
		}
	}
	n := len(cols)
	kc = append(kc, cols[n-3], cols[n-1], catalog.Column{Name: "_truncated", Type: catalog.Boolean})
	kv = append(kv, r[n-3], r[n-1], true)
	return serde.EncodeJSONObject(kc, kv)
}
