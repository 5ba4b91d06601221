package kafka

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestPartitionerVectors(t *testing.T) {
	// FNV-1a's published test values (the FNV reference's test suite).
	for _, tc := range []struct {
		key  string
		want uint32
	}{
		{"", 0x811c9dc5},
		{"a", 0xe40c292c},
		{"foobar", 0xbf9cf968},
	} {
		if got := fnv1a([]byte(tc.key)); got != tc.want {
			t.Errorf("fnv1a(%q) = %#x, want %#x", tc.key, got, tc.want)
		}
	}
	// The CRC-32 check value of "123456789" is 0xcbf43926 = 3421780262.
	if got, want := PartitionerCRC32.Partition([]byte("123456789"), 1000), int32(3421780262%1000); got != want {
		t.Errorf("crc32 partition = %d, want %d", got, want)
	}
	// fnv1a("a") = 0xe40c292c is negative as an int32 (-468965076):
	// Sarama takes the remainder, then its absolute value.
	if got, want := PartitionerFNV1a.Partition([]byte("a"), 7), int32(468965076%7); got != want {
		t.Errorf("fnv1a partition = %d, want %d", got, want)
	}
	if got, want := PartitionerMurmur2.Partition([]byte("abc"), 7), int32(479470107%7); got != want {
		t.Errorf("murmur2 partition = %d, want %d", got, want)
	}
}

func TestParsePartitioner(t *testing.T) {
	for name, want := range map[string]string{
		"": Murmur2, "MURMUR2": Murmur2, "murmur2_random": Murmur2,
		"crc32": CRC32, "consistent_random": CRC32, "Consistent": CRC32,
		"fnv1a": FNV1a, "fnv1a_random": FNV1a,
	} {
		p, err := ParsePartitioner(name)
		if err != nil || p.Name != want {
			t.Errorf("ParsePartitioner(%q) = %v, %v; want %s", name, p.Name, err, want)
		}
	}
	if _, err := ParsePartitioner("random"); err == nil || !strings.Contains(err.Error(), "crc32") {
		t.Errorf("ParsePartitioner(random) = %v, want an error listing the names", err)
	}
}

// TestPartitionersMatchKcat produces keyed records with kcat (librdkafka)
// under each partitioner basin knows, and checks that every record landed
// where the partitioner of that name says: the ground truth for the
// rules of librdkafka's clients. kcat is a test dependency (.ci/run
// installs Debian's kcat).
func TestPartitionersMatchKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is not installed (Debian package kcat; .ci/run installs it)")
	}
	b := startTestBroker(t, "")
	ctx := testCtx(t)
	adm := newTestAdmin(t, b.Addrs())
	const parts = 7
	for _, tc := range []struct{ librdkafka, want string }{
		{"", CRC32}, // kcat's default: consistent_random
		{"consistent_random", CRC32},
		{"murmur2_random", Murmur2},
		{"fnv1a", FNV1a},
	} {
		topic := "kcat-" + tc.want + "-" + strings.ReplaceAll(tc.librdkafka, "_", "-")
		if _, _, err := EnsureTopic(ctx, adm, topic, parts, nil); err != nil {
			t.Fatal(err)
		}
		var in bytes.Buffer
		const n = 200
		for i := range n {
			fmt.Fprintf(&in, "key-%d-%s:v%d\n", i*7919, strings.Repeat("x", i%5), i)
		}
		args := []string{"-P", "-b", b.Addrs()[0], "-t", topic, "-K:"}
		if tc.librdkafka != "" {
			args = append(args, "-X", "partitioner="+tc.librdkafka)
		}
		cmd := exec.CommandContext(ctx, kcat, args...)
		cmd.Stdin = &in
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		cl := newTestClient(t, b.Addrs(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		p := PartitionerOf(tc.want)
		seen := 0
		for seen < n {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s: read %d of %d records: %v", topic, seen, n, err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				seen++
				if want := p.Partition(r.Key, parts); r.Partition != want {
					t.Errorf("%s: key %q on partition %d, %s says %d", topic, r.Key, r.Partition, tc.want, want)
				}
			})
		}
	}
}
