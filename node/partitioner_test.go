package node

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/basindb/basin/kafka"
)

// kcatProduce writes lines "key:value" to topic with kcat (librdkafka),
// under librdkafka's partitioner of that name ("" for kcat's default,
// consistent_random); a line "key:" writes a tombstone.
func kcatProduce(t testing.TB, broker, topic, partitioner string, lines ...string) {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is not installed (Debian package kcat; .ci/run installs it)")
	}
	args := []string{"-P", "-b", broker, "-t", topic, "-K:", "-Z"}
	if partitioner != "" {
		args = append(args, "-X", "partitioner="+partitioner)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, args...)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// producerModel is what a table or a stream's views should hold after
// the records written so far, whatever partition each landed on.
type producerModel struct {
	users  map[string]string // users: id → name
	latest map[string]string // latest: id → "region|n" of the last click
	count  map[string]int64  // per_id: clicks per id
	total  map[string]int64  // per_id: sum of n per id
	region map[string]int64  // by_region: clicks per region
}

func (m *producerModel) click(id, region string, n int64) {
	m.latest[id] = fmt.Sprintf("%s|%d", region, n)
	m.count[id]++
	m.total[id] += n
	m.region[region]++
}

func sortedRows[V any](m map[string]V, f func(k string, v V) string) string {
	var rows []string
	for k, v := range m {
		rows = append(rows, f(k, v))
	}
	sort.Strings(rows)
	if len(rows) == 0 {
		return ""
	}
	return strings.Join(rows, "\n") + "\n"
}

// TestAnyProducersPartitioner writes one table and one stream with three
// producers that place keys differently: kcat with librdkafka's default
// partitioner (CRC32), kcat with murmur2_random (Kafka's), and basin's
// INSERT, each writing keys the others wrote before. Every key lookup,
// SELECT * and view must equal the data written, with one row per key,
// and the misplaced records must be counted.
func TestAnyProducersPartitioner(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	broker := n.Brokers()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, q := range []string{
		`CREATE TABLE users (id VARCHAR PRIMARY KEY, name VARCHAR) WITH (kafka_topic = 'users', partitions = 4)`,
		`CREATE STREAM clicks (id VARCHAR KEY, region VARCHAR, n BIGINT) WITH (kafka_topic = 'clicks', partitions = 4)`,
		`CREATE TABLE named AS SELECT id, name FROM users WHERE name <> 'hidden'`,
		`CREATE TABLE latest AS SELECT id, region, n FROM clicks`,
		`CREATE TABLE per_id AS SELECT id, COUNT(*) AS c, SUM(n) AS total FROM clicks GROUP BY id`,
		`CREATE TABLE by_region AS SELECT region, COUNT(*) AS c FROM clicks GROUP BY region`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	m := &producerModel{users: map[string]string{}, latest: map[string]string{}, count: map[string]int64{},
		total: map[string]int64{}, region: map[string]int64{}}
	regions := []string{"eu", "us", "apac"}

	// Each phase is one producer's writes; the next starts once they
	// show, so that the order of a key's writes is the order written.
	type phase struct {
		producer string // kcat's partitioner, or "insert"
		from, to int    // keys written: u<from> .. u<to-1>
		name     string
		deletes  []int // keys tombstoned (kcat only)
	}
	phases := []phase{
		{producer: "", from: 0, to: 30, name: "crc"},
		{producer: "murmur2_random", from: 10, to: 40, name: "murmur"},
		{producer: "insert", from: 20, to: 50, name: "insert"},
		{producer: "", from: 35, to: 45, name: "hidden", deletes: []int{0, 1, 2, 15, 25, 36}},
	}
	for pi, ph := range phases {
		var users, clicks []string
		var inserts []string
		for k := ph.from; k < ph.to; k++ {
			id := fmt.Sprintf("u%d", k)
			region, num := regions[(k+pi)%len(regions)], int64(k*10+pi)
			m.users[id] = ph.name
			m.click(id, region, num)
			if ph.producer == "insert" {
				inserts = append(inserts,
					fmt.Sprintf(`INSERT INTO users (id, name) VALUES ('%s', '%s')`, id, ph.name),
					fmt.Sprintf(`INSERT INTO clicks (id, region, n) VALUES ('%s', '%s', %d)`, id, region, num))
				continue
			}
			users = append(users, fmt.Sprintf(`%s:{"name":%q}`, id, ph.name))
			clicks = append(clicks, fmt.Sprintf(`%s:{"region":%q,"n":%d}`, id, region, num))
		}
		for _, k := range ph.deletes {
			id := fmt.Sprintf("u%d", k)
			delete(m.users, id)
			users = append(users, id+":")
		}
		if ph.producer == "insert" {
			for _, q := range inserts {
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
		} else {
			kcatProduce(t, broker, "users", ph.producer, users...)
			kcatProduce(t, broker, "clicks", ph.producer, clicks...)
		}
		checkProducerModel(t, conn, m, 50)
	}
	// The CRC32 and murmur2 phases put keys on other partitions than
	// INSERT (murmur2): kcat's default misplaces most of them.
	got, err := queryText(ctx, conn, `SHOW TABLES`, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"users", "named", "latest", "per_id"} {
		if !regexpLine(got, rel+`\|(TABLE|VIEW)\|.*\|murmur2\|[1-9][0-9]*$`) {
			t.Errorf("SHOW TABLES does not count misplaced records of %s:\n%s", rel, got)
		}
	}
	if !regexpLine(got, `by_region\|VIEW\|.*\|murmur2\|0$`) {
		t.Errorf("by_region re-keys every record and finds none misplaced:\n%s", got)
	}
}

// checkProducerModel waits until every relation of
// TestAnyProducersPartitioner equals the model: SELECT * of each, and a
// key lookup of each of keys u0..u<keys-1> in the keyed ones.
func checkProducerModel(t *testing.T, conn *pgx.Conn, m *producerModel, keys int) {
	t.Helper()
	named := map[string]string{}
	for id, name := range m.users {
		if name != "hidden" {
			named[id] = name
		}
	}
	kv := func(k, v string) string { return k + "|" + v }
	wantScan := map[string]string{
		`SELECT id, name FROM users`:       sortedRows(m.users, kv),
		`SELECT id, name FROM named`:       sortedRows(named, kv),
		`SELECT id, region, n FROM latest`: sortedRows(m.latest, kv),
		`SELECT id, c, total FROM per_id`:  sortedRows(m.count, func(k string, c int64) string { return fmt.Sprintf("%s|%d|%d", k, c, m.total[k]) }),
		`SELECT region, c FROM by_region`:  sortedRows(m.region, func(k string, c int64) string { return fmt.Sprintf("%s|%d", k, c) }),
		`SELECT count(*) FROM users`:       fmt.Sprintf("%d\n", len(m.users)),
	}
	eventually(t, 30*time.Second, func() error {
		for q, want := range wantScan {
			got, err := queryText(context.Background(), conn, q, false)
			if err != nil {
				return fmt.Errorf("%s: %v", q, err)
			}
			if !strings.HasPrefix(q, "SELECT count") {
				got = sortLines(got)
			}
			if got != want {
				return fmt.Errorf("%s:\n got %q\nwant %q", q, got, want)
			}
		}
		return nil
	})
	// Lookups read the one partition the relation's partitioner gives
	// the key: right after the scans agree, each must find its row.
	lookups := []struct {
		q     string
		model func(id string) (string, bool)
	}{
		{`SELECT name FROM users WHERE id = '%s'`, func(id string) (string, bool) { v, ok := m.users[id]; return v, ok }},
		{`SELECT name FROM named WHERE id = '%s'`, func(id string) (string, bool) { v, ok := named[id]; return v, ok }},
		{`SELECT region, n FROM latest WHERE id = '%s'`, func(id string) (string, bool) { v, ok := m.latest[id]; return v, ok }},
		{`SELECT c, total FROM per_id WHERE id = '%s'`, func(id string) (string, bool) {
			c, ok := m.count[id]
			return fmt.Sprintf("%d|%d", c, m.total[id]), ok
		}},
	}
	for k := range keys {
		id := fmt.Sprintf("u%d", k)
		for _, l := range lookups {
			q := fmt.Sprintf(l.q, id)
			got, err := queryText(context.Background(), conn, q, false)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			want := ""
			if v, ok := l.model(id); ok {
				want = v + "\n"
			}
			if got != want {
				t.Errorf("%s = %q, want %q", q, got, want)
			}
		}
	}
}

func sortLines(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

// regexpLine reports whether some line of text matches the pattern.
func regexpLine(text, pattern string) bool {
	return regexp.MustCompile("(?m)^" + pattern).MatchString(text)
}

// TestDeclaredPartitioner declares the producers' rule with WITH
// (partitioner = ...): records of kcat under that rule are where the
// relation looks for them (none misplaced), INSERT writes by the same
// rule, and a view keyed as the table inherits it.
func TestDeclaredPartitioner(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct{ option, librdkafka string }{
		{"consistent_random", ""}, // kcat's default
		{"fnv1a", "fnv1a"},
	} {
		name := "t_" + tc.option
		for _, q := range []string{
			fmt.Sprintf(`CREATE TABLE %s (id VARCHAR PRIMARY KEY, v BIGINT) WITH (partitions = 5, partitioner = '%s')`, name, tc.option),
			fmt.Sprintf(`CREATE TABLE %s_v AS SELECT id, v FROM %s WHERE v >= 0`, name, name),
		} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		var lines []string
		for k := range 40 {
			lines = append(lines, fmt.Sprintf(`k%d:{"v":%d}`, k, k))
		}
		kcatProduce(t, n.Brokers()[0], name, tc.librdkafka, lines...)
		if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (id, v) VALUES ('k40', 40), ('k41', 41)`, name)); err != nil {
			t.Fatal(err)
		}
		for _, rel := range []string{name, name + "_v"} {
			eventually(t, 30*time.Second, func() error {
				got, err := queryText(ctx, conn, fmt.Sprintf(`SELECT count(*), sum(v) FROM %s`, rel), false)
				if err != nil || got != "42|861\n" {
					return fmt.Errorf("%s: %q, %v", rel, got, err)
				}
				return nil
			})
			for k := range 42 {
				q := fmt.Sprintf(`SELECT v FROM %s WHERE id = 'k%d'`, rel, k)
				if got, err := queryText(ctx, conn, q, false); err != nil || got != fmt.Sprintf("%d\n", k) {
					t.Errorf("%s = %q, %v", q, got, err)
				}
			}
		}
		got, err := queryText(ctx, conn, `SHOW TABLES`, false)
		if err != nil {
			t.Fatal(err)
		}
		canonical := map[string]string{"consistent_random": "crc32", "fnv1a": "fnv1a"}[tc.option]
		for _, rel := range []string{name, name + "_v"} {
			if !regexpLine(got, rel+`\|(TABLE|VIEW)\|.*\|`+canonical+`\|0$`) {
				t.Errorf("SHOW TABLES: %s should be placed by %s with nothing misplaced:\n%s", rel, canonical, got)
			}
		}
	}
}

// TestMisplacedSkipLogged checks that a misplaced record a view cannot
// evaluate is logged, once, as the source record it is (its topic,
// partition and offset), not as the internal record that forwarded it.
func TestMisplacedSkipLogged(t *testing.T) {
	n := startNode(t, t.TempDir())
	conn := connect(t, n.PGAddr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, q := range []string{
		`CREATE STREAM nums (id VARCHAR KEY, n BIGINT) WITH (partitions = 4)`,
		`CREATE TABLE inv AS SELECT id, 100 / n AS q FROM nums`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Keys whose CRC32 partition differs from their murmur2 one, so
	// kcat's default misplaces them; "z0" divides by zero.
	var lines []string
	var bad string
	for k := 0; len(lines) < 6; k++ {
		id := fmt.Sprintf("z%d", k)
		if kafka.PartitionerCRC32.Partition([]byte(id), 4) == kafka.PartitionerMurmur2.Partition([]byte(id), 4) {
			continue
		}
		v := k + 1
		if bad == "" {
			bad, v = id, 0
		}
		lines = append(lines, fmt.Sprintf(`%s:{"n":%d}`, id, v))
	}
	kcatProduce(t, n.Brokers()[0], "nums", "", lines...)
	eventually(t, 30*time.Second, func() error {
		got, err := queryText(ctx, conn, `SELECT count(*) FROM inv`, false)
		if err != nil || got != "5\n" {
			return fmt.Errorf("inv: %q, %v", got, err)
		}
		return nil
	})
	want := fmt.Sprintf("nums|%d|0|%s\n", kafka.PartitionerCRC32.Partition([]byte(bad), 4), bad)
	eventually(t, 30*time.Second, func() error {
		got, err := queryText(ctx, conn, `SELECT source, source_partition, source_offset, record_key FROM basin_processing_log`, false)
		if err != nil || got != want {
			return fmt.Errorf("processing log: %q, %v; want %q", got, err, want)
		}
		return nil
	})
}
