package node

import (
	"context"
	"fmt"
	osexec "os/exec"
	"strings"
	"testing"
	"time"
)

// TestRecordFormatsWithKcat reads records another client (kcat, which is
// librdkafka) wrote in value_format 'delimited' and 'kafka', unwrapped
// JSON and with keys key_format 'none' ignores, and has kcat read what
// INSERT writes in those formats. A record that does not fit its format
// goes to the processing log with the reason (by each query that reads
// it). A derived stream writes DELIMITED with its own delimiter.
func TestRecordFormatsWithKcat(t *testing.T) {
	n := startNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	broker := n.Brokers()[0]
	for _, q := range []string{
		`CREATE STREAM csv (id VARCHAR KEY, name VARCHAR, n BIGINT, price DOUBLE, ok BOOLEAN, at TIMESTAMP, d DATE)
		   WITH (kafka_topic = 'csv_in', value_format = 'delimited', partitions = 1)`,
		`CREATE TABLE csv_names AS SELECT id, name, n, price, ok, at, d FROM csv`,
		`CREATE STREAM csv_pipe WITH (kafka_topic = 'csv_pipe', value_format = 'delimited', value_delimiter = '|') AS SELECT id, name, n FROM csv`,
		`CREATE STREAM semi (id VARCHAR KEY, a VARCHAR, b BIGINT) WITH (kafka_topic = 'semi_in', value_format = 'delimited', value_delimiter = ';', partitions = 1)`,
		`CREATE STREAM words (id VARCHAR KEY, w VARCHAR) WITH (kafka_topic = 'words_in', value_format = 'kafka', partitions = 1)`,
		`CREATE STREAM nums (id VARCHAR KEY, n BIGINT) WITH (kafka_topic = 'nums_out', value_format = 'kafka', partitions = 1)`,
		`CREATE STREAM amounts (id VARCHAR KEY, amount DOUBLE) WITH (kafka_topic = 'amounts_in', wrap_single_value = false, partitions = 1)`,
		`CREATE STREAM keyless (a VARCHAR, b BIGINT) WITH (kafka_topic = 'keyless_in', key_format = 'none', value_format = 'delimited', partitions = 1)`,
	} {
		c.exec(q)
	}
	kcatProduce(t, broker, "csv_in", "",
		`k1:alice,3,1.5,true,1700000000000,2024-05-17`,
		`k2:"Smith, ""J""",,2.25,false,2023-11-14T22:13:20.5Z,`,
		`k3:too,few`,
		`k4:bob,notanumber,1,true,1,2024-01-01`)
	kcatProduce(t, broker, "semi_in", "", `s1:x,y;42`)
	kcatProduce(t, broker, "words_in", "", `w1:héllo wörld`)
	kcatProduce(t, broker, "amounts_in", "", `a1:12.5`, `a2:null`, `a3:"7.25"`)
	kcatProduce(t, broker, "keyless_in", "", `anything:x,1`, `:y,2`)

	waitQuery(t, c.conn, `SELECT * FROM csv_names ORDER BY id`,
		"k1|alice|3|1.5|true|2023-11-14 22:13:20|2024-05-17\n"+
			"k2|Smith, \"J\"|NULL|2.25|false|2023-11-14 22:13:20.5|NULL\n")
	waitQuery(t, c.conn, `SELECT DISTINCT source_offset, error FROM basin_processing_log ORDER BY source_offset`,
		"2|value has 2 DELIMITED fields, and the value columns are 6 (name, n, price, ok, at, d): \"too,few\"\n"+
			"3|DELIMITED field 2 (column \"n\"): \"notanumber\" is not a valid BIGINT\n")
	waitQuery(t, c.conn, `SELECT * FROM semi`, "s1|x,y|42\n")
	waitQuery(t, c.conn, `SELECT * FROM words`, "w1|héllo wörld\n")
	waitQuery(t, c.conn, `SELECT * FROM amounts ORDER BY id`, "a1|12.5\na2|NULL\na3|7.25\n")
	waitQuery(t, c.conn, `SELECT * FROM keyless ORDER BY a`, "x|1\ny|2\n")

	// What basin writes, kcat reads.
	c.exec(`INSERT INTO csv VALUES ('k5', 'a;b,"c"', -7, 0.5, NULL, TIMESTAMP '2023-11-14 22:13:20.25', DATE '2020-02-29')`)
	c.exec(`INSERT INTO nums VALUES ('n1', 1700000000000), ('n2', -1)`)
	c.exec(`INSERT INTO amounts VALUES ('a4', 3.5)`)
	if got := kcatLines(t, broker, "csv_in"); len(got) != 5 || got[4] != "k5\t\"a;b,\"\"c\"\"\",-7,0.5,,1700000000250,2020-02-29" {
		t.Errorf("kcat reads csv_in as %q", got)
	}
	// A derived stream writes its own format.
	waitQuery(t, c.conn, `SELECT count(*) FROM csv_pipe`, "3\n")
	if got := strings.Join(kcatLines(t, broker, "csv_pipe"), "\n"); got != "k1\talice|3\nk2\t\"Smith, \"\"J\"\"\"|\nk5\t\"a;b,\"\"c\"\"\"|-7" {
		t.Errorf("kcat reads csv_pipe as %q", got)
	}
	// kcat's -s value=>q reads Kafka's LongSerializer bytes.
	out := kcatRun(t, "-C", "-b", broker, "-t", "nums_out", "-e", "-q", "-s", "value=>q", "-f", "%k=%s\n")
	if out != "n1=1700000000000\nn2=-1\n" {
		t.Errorf("kcat reads nums_out as %q", out)
	}
	if got := kcatLines(t, broker, "amounts_in"); len(got) != 4 || got[3] != "a4\t3.5" {
		t.Errorf("kcat reads amounts_in as %q", strings.Join(got, "|"))
	}
}

// TestHeaderColumns reads HEADER('key') columns from records kcat wrote
// with headers (the last of a key's headers; basin's own "basin." ones
// never), in a view whose records kcat's partitioner put on partitions
// other than their keys' (forwarded with their headers), and in a
// stream read.
func TestHeaderColumns(t *testing.T) {
	n := startNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := sqlConn{t, ctx, connect(t, n.PGAddr())}
	broker := n.Brokers()[0]
	c.exec(`CREATE STREAM hin (id VARCHAR KEY, v VARCHAR, trace BYTES HEADER('trace'), forged BYTES HEADER('basin.src'), missing BYTES HEADER('nope'),
	          hs ARRAY<STRUCT<key STRING, value BYTES>> HEADERS)
	          WITH (kafka_topic = 'hin', partitions = 4)`)
	c.exec(`CREATE TABLE htraces AS SELECT id, v, from_bytes(trace, 'utf8') AS trace, convert_from(trace, 'UTF8') = from_bytes(trace, 'utf8') AS same, forged, missing FROM hin`)
	var lines []string
	var want strings.Builder
	for i := range 8 {
		lines = append(lines, fmt.Sprintf(`k%d:{"v":"x%d"}`, i, i))
		fmt.Fprintf(&want, "k%d|x%d|t-42|true|NULL|NULL\n", i, i)
	}
	kcatProduceWith(t, []string{"-P", "-b", broker, "-t", "hin", "-K:", "-H", "trace=first", "-H", "trace=t-42", "-H", "basin.src=forged"}, lines...)
	waitQuery(t, c.conn, `SELECT * FROM htraces ORDER BY id`, want.String())
	waitQuery(t, c.conn, `SELECT count(*) FROM hin WHERE trace = '\x742d3432'::bytea AND forged IS NULL`, "8\n")
	waitQuery(t, c.conn, `SELECT DISTINCT cardinality(hs), hs[1]->key, from_bytes(hs[1]->value, 'utf8'), hs[2]->key, from_bytes(hs[2]->value, 'utf8') FROM hin`,
		"2|trace|first|trace|t-42\n")
	if _, err := c.conn.Exec(ctx, `INSERT INTO hin (id, v, trace) VALUES ('k9', 'y', '\x00')`); err == nil || !strings.Contains(err.Error(), "read from the records' headers") {
		t.Errorf("INSERT into a header column: %v", err)
	}
}

// kcatProduceWith runs kcat with args, writing lines to its stdin.
func kcatProduceWith(t *testing.T, args []string, lines ...string) {
	t.Helper()
	kcat, err := osexec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is not installed (Debian package kcat; .ci/run installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, kcat, args...)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
