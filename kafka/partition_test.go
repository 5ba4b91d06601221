package kafka

import (
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The vectors of Kafka's own UtilsTest.testMurmur2
// (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java).
func TestMurmur2KafkaVectors(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	} {
		if got := int32(murmur2([]byte(tc.key))); got != tc.want {
			t.Errorf("murmur2(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}

func TestPartitionKnownValues(t *testing.T) {
	for _, tc := range []struct {
		key  string
		n    int32
		want int32
	}{
		// toPositive(-973932308) = 1173551340.
		{"21", 1, 0},
		{"21", 4, 1173551340 % 4},
		{"21", 10, 1173551340 % 10},
		// toPositive(479470107) = 479470107.
		{"abc", 7, 479470107 % 7},
	} {
		if got := Partition([]byte(tc.key), tc.n); got != tc.want {
			t.Errorf("Partition(%q, %d) = %d, want %d", tc.key, tc.n, got, tc.want)
		}
	}
}

// TestPartitionMatchesKgo checks Partition against kgo's Kafka-compatible
// key partitioner on random keys of every length class murmur2 treats
// differently (tail of 0..3 bytes).
func TestPartitionMatchesKgo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kp := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	for i := 0; i < 20000; i++ {
		key := make([]byte, rng.IntN(40))
		for j := range key {
			key[j] = byte(rng.UintN(256))
		}
		n := int32(1 + rng.IntN(64))
		want := int32(kp.Partition(&kgo.Record{Key: key}, int(n)))
		if got := Partition(key, n); got != want {
			t.Fatalf("Partition(%x, %d) = %d, kgo says %d", key, n, got, want)
		}
	}
}

func TestPartitionPanicsOnZeroPartitions(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Partition(key, 0) did not panic")
		}
	}()
	Partition([]byte("k"), 0)
}

func BenchmarkPartition(b *testing.B) {
	key := []byte("customer-000123456")
	for b.Loop() {
		Partition(key, 12)
	}
}
