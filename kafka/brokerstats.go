package kafka

import (
	"io/fs"
	"path/filepath"
	"time"
)

// BrokerStats are the embedded broker's key figures, for the metrics of
// the node that runs it.
type BrokerStats struct {
	// Connections is the client connections it holds open.
	Connections int
	// DiskBytes is the size of the files in its data dir (its logs and
	// state); 0 for a broker without one.
	DiskBytes int64
	// Accepting is whether it takes new connections (Health is nil).
	Accepting bool
	// DiskFull is whether a write of its log or state has met a full
	// disk since it started (DiskFullSince).
	DiskFull bool
}

// Stats returns the broker's figures now. It walks the data dir for its
// size, so it is for a scrape every few seconds, not a hot path.
func (b *Broker) Stats() BrokerStats {
	var s BrokerStats
	if b.limited.Load() != nil {
		s.Connections, _ = b.openConns()
	}
	s.Accepting = b.Health() == nil
	s.DiskFull = b.DiskFullSince(time.Time{}) != nil
	if b.dataDir != "" {
		_ = filepath.WalkDir(b.dataDir, func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // a file removed while walking
			}
			if !d.IsDir() {
				if info, err := d.Info(); err == nil {
					s.DiskBytes += info.Size()
				}
			}
			return nil
		})
	}
	return s
}
