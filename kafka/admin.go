package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/basindb/basin/internal/backoff"
)

// ErrUnknownTopic reports that a topic does not exist.
var ErrUnknownTopic = errors.New("kafka: unknown topic")

// EnsureTopic creates the topic with the given partition count and
// configs if it does not exist, and waits until every partition has a
// leader. If the topic exists, it is left alone and its actual partition
// count is returned: whether a mismatch with partitions is an error is
// the caller's decision. Replication uses the broker's default
// (replication factor -1).
//
// Concurrent callers (several nodes creating the same internal topic) are
// safe: one creates the topic, the others see it exist.
func EnsureTopic(ctx context.Context, adm *kadm.Client, name string, partitions int32, configs map[string]*string) (created bool, actualPartitions int32, err error) {
	if partitions < 1 {
		return false, 0, fmt.Errorf("kafka: create topic %q: partition count %d must be at least 1", name, partitions)
	}
	b := backoff.New(20*time.Millisecond, time.Second)
	for {
		resp, err := adm.CreateTopic(ctx, partitions, -1, configs, name)
		switch {
		case err == nil:
			n := resp.NumPartitions
			if n <= 0 { // brokers before Kafka 2.4 do not echo it
				n = partitions
			}
			if err := waitTopicLeaders(ctx, adm, name); err != nil {
				return true, n, err
			}
			return true, n, nil
		case errors.Is(err, kerr.TopicAlreadyExists):
			n, err := TopicPartitions(ctx, adm, name)
			if err == nil {
				return false, n, nil
			}
			if !errors.Is(err, ErrUnknownTopic) {
				return false, 0, err
			}
			// It exists for the controller but not yet in metadata, or
			// it was just deleted: try again.
		default:
			return false, 0, fmt.Errorf("kafka: create topic %q: %w", name, adminErr(err, resp.ErrMessage))
		}
		if err := b.Wait(ctx); err != nil {
			return false, 0, fmt.Errorf("kafka: create topic %q: %w", name, err)
		}
	}
}

// TopicPartitions returns the topic's partition count, or an error
// wrapping ErrUnknownTopic. It asks the broker, not the client's metadata
// cache, so it sees a topic created or deleted a moment ago.
func TopicPartitions(ctx context.Context, adm *kadm.Client, name string) (int32, error) {
	d, err := topicDetail(ctx, adm, name)
	if err != nil {
		return 0, err
	}
	return int32(len(d.Partitions)), nil
}

// topicDetail fetches the topic's metadata from a broker. kadm serves
// metadata from the client's cache for up to MetadataMinAge unless
// authorized operations are requested; asking for them is how we bypass
// the cache (and refresh it for the calls that use it, like ListOffsets).
func topicDetail(ctx context.Context, adm *kadm.Client, name string) (kadm.TopicDetail, error) {
	md, err := adm.Metadata(kadm.WithAuthorizedOps(ctx), name)
	if err != nil {
		return kadm.TopicDetail{}, fmt.Errorf("kafka: metadata for topic %q: %w", name, err)
	}
	d, ok := md.Topics[name]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return kadm.TopicDetail{}, fmt.Errorf("kafka: topic %q: %w", name, ErrUnknownTopic)
	}
	if d.Err != nil {
		return kadm.TopicDetail{}, fmt.Errorf("kafka: metadata for topic %q: %w", name, d.Err)
	}
	return d, nil
}

// waitTopicLeaders waits until the topic shows in metadata with a leader
// for every partition: a real Kafka answers CreateTopics before the
// partitions are ready to take produce requests.
func waitTopicLeaders(ctx context.Context, adm *kadm.Client, name string) error {
	b := backoff.New(10*time.Millisecond, time.Second)
	for {
		d, err := topicDetail(ctx, adm, name)
		if err != nil && !errors.Is(err, ErrUnknownTopic) {
			return err
		}
		ready := err == nil && len(d.Partitions) > 0
		for _, p := range d.Partitions {
			if p.Leader < 0 || p.Err != nil {
				ready = false
			}
		}
		if ready {
			return nil
		}
		if err := b.Wait(ctx); err != nil {
			return fmt.Errorf("kafka: waiting for topic %q partitions to have leaders: %w", name, err)
		}
	}
}

// EndOffsets returns, for every partition of the topic, the last stable
// offset: the offset a read_committed consumer (ConsumerOpts) reaches once
// it has read everything it can. It is the high watermark except while a
// transaction is open on the partition, where it stops at the first
// offset of that transaction. This is what lag must be measured against:
// a consumer can never pass it. (kadm calls it ListCommittedOffsets;
// ListEndOffsets would return high watermarks.)
//
// The error wraps ErrUnknownTopic if the topic does not exist.
func EndOffsets(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, error) {
	offs, err := listCommittedOffsets(ctx, adm, topic)
	if errors.Is(err, ErrUnknownTopic) {
		// The client may hold cached metadata from before the topic was
		// created; refresh it and try once more.
		if _, err := TopicPartitions(ctx, adm, topic); err != nil {
			return nil, err
		}
		offs, err = listCommittedOffsets(ctx, adm, topic)
	}
	return offs, err
}

func listCommittedOffsets(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, error) {
	listed, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("kafka: end offsets of topic %q: %w", topic, err)
	}
	ps := listed[topic]
	if len(ps) == 0 {
		return nil, fmt.Errorf("kafka: end offsets of topic %q: %w", topic, ErrUnknownTopic)
	}
	out := make(map[int32]int64, len(ps))
	for p, o := range ps {
		if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("kafka: end offsets of topic %q: %w", topic, ErrUnknownTopic)
		}
		if o.Err != nil {
			return nil, fmt.Errorf("kafka: end offset of topic %q partition %d: %w", topic, p, o.Err)
		}
		out[p] = o.Offset
	}
	return out, nil
}

// DefaultMaxMessageBytes is Kafka's default max.message.bytes
// (message.max.bytes on the broker): the largest record batch, after
// compression, a broker takes for a topic that sets no other.
const DefaultMaxMessageBytes = 1048588

// MaxMessageBytes returns the topic's max.message.bytes as the broker
// describes it: the topic's own setting, else the broker's
// message.max.bytes. A broker that does not describe it (or a value that
// is not a number) gives DefaultMaxMessageBytes. The error wraps
// ErrUnknownTopic if the topic does not exist.
func MaxMessageBytes(ctx context.Context, adm *kadm.Client, topic string) (int, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("kafka: configs of topic %q: %w", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return 0, fmt.Errorf("kafka: configs of topic %q: %w", topic, ErrUnknownTopic)
	}
	if err != nil {
		return 0, fmt.Errorf("kafka: configs of topic %q: %w", topic, adminErr(err, rc.ErrMessage))
	}
	for _, c := range rc.Configs {
		if c.Key != "max.message.bytes" || c.Value == nil {
			continue
		}
		if n, err := strconv.Atoi(*c.Value); err == nil && n > 0 {
			return n, nil
		}
	}
	return DefaultMaxMessageBytes, nil
}

// DeleteTopic deletes the topic. The error wraps ErrUnknownTopic if it does
// not exist.
func DeleteTopic(ctx context.Context, adm *kadm.Client, name string) error {
	resp, err := adm.DeleteTopic(ctx, name)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("kafka: delete topic %q: %w", name, ErrUnknownTopic)
	}
	if err != nil {
		return fmt.Errorf("kafka: delete topic %q: %w", name, adminErr(err, resp.ErrMessage))
	}
	return nil
}

// adminErr adds the broker's error message, which often says more than the
// error code, to err.
func adminErr(err error, msg string) error {
	if msg == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, msg)
}
