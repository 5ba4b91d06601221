package kafka

// Crash recovery of transactions that were open when a broker died.
//
// kfake, reloading a data dir that was not closed cleanly, treats every
// transaction still open in the log as aborted: it records the aborted
// range for fetch responses and bumps the producer's epoch. It does not
// write an abort marker, though, and the consumers (kgo and the Java
// client alike) skip a producer's transactional batches from an aborted
// range's first offset until they meet that producer's abort marker. The
// producer keeps its id across the restart (same transactional id, next
// epoch), so without a marker every later transaction of that producer on
// that partition, committed or not, is invisible to read_committed
// consumers: a restarted basin task would commit changelog records that
// its standbys never see.
//
// So StartBroker, after an unclean shutdown, scans the segment headers for
// transactions left open and writes the missing abort markers
// (WriteTxnMarkers, as Kafka's transaction coordinator does when it
// aborts a transaction) before anyone else can connect: it starts the
// cluster once on a private loopback port, writes the markers, closes it
// cleanly and only then starts it on the configured address.
//
// A clean Close leaves a marker file; its absence at start means the
// previous broker died. Open transactions survive a clean Close (kfake
// saves them and the producer's next InitProducerID aborts them properly),
// so the scan must not run then.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cleanFileName is written to DataDir by a clean Close and removed when
// a broker starts.
const cleanFileName = "basin-broker.clean"

// openTxn is a transaction whose data is in a partition's log without a
// commit or abort marker after it.
type openTxn struct {
	topic     string
	partition int32
	pid       int64
	epoch     int16
}

// takeCleanMarker reports whether the previous broker on dir shut down
// cleanly, and removes the marker (durably) so that a crash of this broker
// is seen as one by the next.
func takeCleanMarker(dir string) (bool, error) {
	err := os.Remove(filepath.Join(dir, cleanFileName))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kafka: remove clean shutdown marker: %w", err)
	}
	return true, syncDir(dir)
}

// putCleanMarker records a clean shutdown in dir.
func putCleanMarker(dir string) error {
	f, err := os.Create(filepath.Join(dir, cleanFileName))
	if err != nil {
		return err
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// hasState reports whether dir holds a kfake cluster's state.
func hasState(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "meta.json"))
	return err == nil
}

// scanOpenTxns reads the record batch headers of every partition in dir
// and returns the transactions left open. It reads kfake's layout:
// partitions/<path-escaped topic>-<partition>/<base offset>.dat, each
// segment a sequence of Kafka v2 RecordBatches.
func scanOpenTxns(dir string) ([]openTxn, error) {
	pdirs, err := os.ReadDir(filepath.Join(dir, "partitions"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var open []openTxn
	for _, pd := range pdirs {
		if !pd.IsDir() {
			continue
		}
		i := strings.LastIndexByte(pd.Name(), '-')
		if i < 0 {
			continue
		}
		topic, err1 := url.PathUnescape(pd.Name()[:i])
		part, err2 := strconv.ParseInt(pd.Name()[i+1:], 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		txns, err := scanPartition(filepath.Join(dir, "partitions", pd.Name()))
		if err != nil {
			return nil, fmt.Errorf("topic %q partition %d: %w", topic, part, err)
		}
		for pid, epoch := range txns {
			open = append(open, openTxn{topic, int32(part), pid, epoch})
		}
	}
	return open, nil
}

// scanPartition returns the producers (id → epoch) with a transaction open
// at the end of the partition's log.
func scanPartition(pdir string) (map[int64]int16, error) {
	ents, err := os.ReadDir(pdir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".dat")
		if !ok || e.IsDir() {
			continue
		}
		if base, err := strconv.ParseInt(name, 10, 64); err == nil {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	open := make(map[int64]int16)
	for _, base := range bases {
		if err := scanSegment(filepath.Join(pdir, strconv.FormatInt(base, 10)+".dat"), open); err != nil {
			return nil, err
		}
	}
	return open, nil
}

// RecordBatch header layout (Kafka message format v2).
const (
	batchLengthOff    = 8  // int32: bytes after this field
	batchMagicOff     = 16 // int8
	batchAttrsOff     = 21 // int16
	batchPIDOff       = 43 // int64
	batchEpochOff     = 51 // int16
	batchHeaderSize   = 61
	batchMinLength    = batchHeaderSize - 12
	attrTransactional = 0x10
	attrControl       = 0x20
)

// scanSegment updates open with the transactional batches of one segment:
// a data batch opens its producer's transaction, a control batch (commit
// or abort marker) closes it. A torn batch at the end, which kfake drops
// on load, ends the scan.
func scanSegment(path string, open map[int64]int16) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	var hdr [batchHeaderSize]byte
	for pos := int64(0); pos+batchHeaderSize <= st.Size(); {
		if _, err := f.ReadAt(hdr[:], pos); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		length := int64(int32(binary.BigEndian.Uint32(hdr[batchLengthOff:])))
		if length < batchMinLength || hdr[batchMagicOff] != 2 || pos+12+length > st.Size() {
			return nil
		}
		attrs := binary.BigEndian.Uint16(hdr[batchAttrsOff:])
		pid := int64(binary.BigEndian.Uint64(hdr[batchPIDOff:]))
		epoch := int16(binary.BigEndian.Uint16(hdr[batchEpochOff:]))
		switch {
		case attrs&attrControl != 0:
			delete(open, pid)
		case attrs&attrTransactional != 0:
			open[pid] = epoch
		}
		pos += 12 + length
	}
	return nil
}

// abortOpenTxns starts the cluster on a private loopback port, writes an
// abort marker for every transaction in txns and closes the cluster
// cleanly.
func abortOpenTxns(txns []openTxn, kopts []kfake.Opt) error {
	c, err := kfake.NewCluster(append(kopts, kfake.ListenFn(func(network, _ string) (net.Listener, error) {
		return net.Listen(network, "127.0.0.1:0")
	}))...)
	if err != nil {
		return err
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		return err
	}
	defer cl.Close()

	type producer struct {
		pid   int64
		epoch int16
	}
	byProducer := make(map[producer]map[string][]int32)
	for _, t := range txns {
		k := producer{t.pid, t.epoch}
		if byProducer[k] == nil {
			byProducer[k] = make(map[string][]int32)
		}
		byProducer[k][t.topic] = append(byProducer[k][t.topic], t.partition)
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	for p, topics := range byProducer {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID = p.pid
		m.ProducerEpoch = p.epoch
		m.Committed = false
		for topic, parts := range topics {
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic = topic
			mt.Partitions = parts
			m.Topics = append(m.Topics, mt)
		}
		req.Markers = append(req.Markers, m)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("write abort markers: %w", err)
	}
	for _, m := range resp.Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				err := kerr.ErrorForCode(p.ErrorCode)
				// A partition directory can outlive its deleted topic.
				if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
					return fmt.Errorf("write abort marker for producer %d on topic %q partition %d: %w",
						m.ProducerID, t.Topic, p.Partition, err)
				}
			}
		}
	}
	return nil
}
