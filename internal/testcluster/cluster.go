package testcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/basindb/basin/internal/poll"
)

// Options configure a test cluster. The zero value is one node.
type Options struct {
	// Nodes is how many `basin serve` processes Start starts. Default 1.
	Nodes int
	// Cluster is the --cluster name. Default "tc-" and 8 random hex
	// digits, so tests never share catalogs.
	Cluster string
	// Args are appended to every node's command line, after the
	// harness's own flags (a repeated flag takes the last value). They
	// must not change the node id, the addresses or the data dir: the
	// Node's fields and the readiness check rely on them.
	Args []string
	// NodeArgs are appended to node i's command line, after Args.
	NodeArgs map[int][]string
	// BrokerArgs are appended to the broker's command line.
	BrokerArgs []string
	// Env holds "KEY=value" entries added to every process's
	// environment: the test binary's, without its BASIN_* variables, so
	// a developer's settings do not leak into tests.
	Env []string
	// Password is user basin's password on every connection the harness
	// opens, for nodes run with --auth scram (and BASIN_USERS in Env).
	// Empty connects without one.
	Password string
	// LogLevel is every process's --log-level. Default $BASIN_TEST_LOG,
	// else "info".
	LogLevel string
	// StartTimeout bounds the wait for each process to be ready, at
	// start and at each Restart. Default 60s, Timeout(60s) under the
	// race detector.
	StartTimeout time.Duration
}

func (o *Options) ensureDefaults() {
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.Cluster == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.Cluster = "tc-" + hex.EncodeToString(b[:])
	}
	if o.LogLevel == "" {
		o.LogLevel = os.Getenv("BASIN_TEST_LOG")
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = Timeout(60 * time.Second)
	}
}

// Cluster is a running broker and its nodes.
type Cluster struct {
	// Name is the --cluster name of every node.
	Name string

	t      testing.TB
	opts   Options
	bin    string
	dir    string // root of the data dirs
	logDir string
	env    []string
	broker *Process
	// brokerAddr is set by the broker's first readiness check, before
	// Start starts any node, and never changes: a restarted broker
	// listens where it did.
	brokerAddr string

	mu struct {
		sync.Mutex
		nodes    []*Node
		producer *kgo.Client
		// manual is ProduceTo's producer.
		manual *kgo.Client
	}
}

// Start starts a broker and opts.Nodes nodes and waits until all are
// ready. Everything is killed when the test ends.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	opts.ensureDefaults()
	c := &Cluster{Name: opts.Cluster, t: t, opts: opts, bin: Binary(t)}
	// TempDir first: its removal is then a cleanup that runs after ours,
	// when every process is gone.
	c.dir = t.TempDir()
	c.logDir = filepath.Join(c.dir, "logs")
	if dir := os.Getenv("BASIN_TEST_LOG_DIR"); dir != "" {
		c.logDir = filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"-"+c.Name)
	}
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BASIN_") {
			c.env = append(c.env, kv)
		}
	}
	c.env = append(c.env, Env()...)
	c.env = append(c.env, opts.Env...)
	t.Cleanup(c.cleanup)

	args := append([]string{"broker", "--addr", "127.0.0.1:0", "--data-dir", filepath.Join(c.dir, "broker"),
		"--log-level", opts.LogLevel}, opts.BrokerArgs...)
	b, err := newProcess(t, "broker", c.bin, args, c.env, c.logDir, opts.StartTimeout)
	if err != nil {
		t.Fatal(err)
	}
	b.ready = c.brokerReady
	c.broker = b
	logFrom, err := b.start()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.waitReady(opts.StartTimeout, logFrom); err != nil {
		b.ackExit()
		t.Fatalf("%v\n%s", err, b.Tail(tailLines))
	}
	// A restarted broker must come back on the same port: the nodes
	// have it as --brokers.
	b.mu.Lock()
	b.mu.args[2] = c.brokerAddr
	b.mu.Unlock()

	c.addNodes(t, opts.Nodes)
	return c
}

// brokerLine is what `basin broker` prints once it listens.
var brokerLine = regexp.MustCompile(`basin broker listening on (\S+)`)

// brokerReady is the broker's readiness check: it has printed its
// address, and a Kafka client gets an answer there.
func (c *Cluster) brokerReady(ctx context.Context, logFrom int) error {
	m := brokerLine.FindStringSubmatch(c.broker.log.since(logFrom))
	if m == nil {
		return errors.New(`no "basin broker listening on" line in its log yet`)
	}
	addr, _, _ := strings.Cut(m[1], ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		return fmt.Errorf("kafka client at %s: %w", addr, err)
	}
	if c.brokerAddr == "" {
		c.brokerAddr = addr
	}
	return nil
}

// AddNode starts one more node, node-<len(Nodes())>, and waits until it
// is ready.
func (c *Cluster) AddNode(t testing.TB) *Node {
	t.Helper()
	return c.addNodes(t, 1)[0]
}

// addNodes starts count nodes together and waits for all of them.
func (c *Cluster) addNodes(t testing.TB, count int) []*Node {
	t.Helper()
	c.mu.Lock()
	first := len(c.mu.nodes)
	var nodes []*Node
	for i := first; i < first+count; i++ {
		n, err := c.newNode(i)
		if err != nil {
			c.mu.Unlock()
			t.Fatal(err)
		}
		c.mu.nodes = append(c.mu.nodes, n)
		nodes = append(nodes, n)
	}
	c.mu.Unlock()

	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.startNode(n)
		}()
	}
	wg.Wait()
	var failed []string
	for i, err := range errs {
		if err != nil {
			failed = append(failed, fmt.Sprintf("%v\n%s", err, nodes[i].Tail(tailLines)))
		}
	}
	if len(failed) > 0 {
		t.Fatal(strings.Join(failed, "\n"))
	}
	return nodes
}

func (c *Cluster) newNode(i int) (*Node, error) {
	id := fmt.Sprintf("node-%d", i)
	n := &Node{Index: i, ID: id, DataDir: filepath.Join(c.dir, id), password: c.opts.Password}
	p, err := newProcess(c.t, id, c.bin, nil, c.env, c.logDir, c.opts.StartTimeout)
	if err != nil {
		return nil, err
	}
	p.ready = n.checkReady
	n.Process = p
	if err := c.pickAddrs(n); err != nil {
		return nil, err
	}
	return n, nil
}

// pickAddrs gives n free ports and the command line that uses them.
// Another process may take a port between now and the node's bind;
// startNode then picks again.
func (c *Cluster) pickAddrs(n *Node) error {
	pg, err := freeAddr()
	if err != nil {
		return err
	}
	h, err := freeAddr()
	if err != nil {
		return err
	}
	n.PGAddr, n.HTTPAddr = pg, h
	args := []string{"serve",
		"--brokers", c.brokerAddr,
		"--cluster", c.Name,
		"--node-id", n.ID,
		"--data-dir", n.DataDir,
		"--pg-addr", n.PGAddr,
		"--http-addr", n.HTTPAddr,
		"--log-level", c.opts.LogLevel,
	}
	if raceEnabled {
		// A race-built node on a loaded machine can miss five of the
		// default 100 ms heartbeats while alive, and its peers would
		// take it for down (forwarded reads give up on it), so they come
		// twice as far apart. No further: a frozen peer must still be
		// found down (after five) well before a forwarded read's 2 s
		// connect timeout, as TestClusterReadsAroundAFrozenNode checks.
		// Args may say otherwise.
		args = append(args, "--heartbeat-interval", "200ms")
	}
	args = append(args, c.opts.Args...)
	args = append(args, c.opts.NodeArgs[n.Index]...)
	n.mu.Lock()
	n.mu.args = args
	n.mu.Unlock()
	return nil
}

// startNode starts n and waits until it is ready, once more on new ports
// if a port it was given was taken meanwhile.
func (c *Cluster) startNode(n *Node) error {
	for attempt := 1; ; attempt++ {
		logFrom, err := n.start()
		if err != nil {
			return err
		}
		err = n.waitReady(c.opts.StartTimeout, logFrom)
		if err == nil {
			return nil
		}
		n.Kill() // not ready in time, or already gone
		n.ackExit()
		if attempt == 1 && strings.Contains(n.log.since(logFrom), "address already in use") {
			n.log.mark("a port was taken; starting again on other ports")
			if err := c.pickAddrs(n); err != nil {
				return err
			}
			continue
		}
		return err
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("testcluster: finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Broker is the broker's address, host:port, for --brokers and Kafka
// clients.
func (c *Cluster) Broker() string { return c.brokerAddr }

// BrokerProcess is the broker, to kill, stop or restart it.
func (c *Cluster) BrokerProcess() *Process { return c.broker }

// Nodes returns every node ever started, running or not, by index.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Node(nil), c.mu.nodes...)
}

// Node returns node i (its ID is "node-<i>").
func (c *Cluster) Node(i int) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.nodes[i]
}

// RandomNode returns a node chosen with rng among those that are running
// and not stopped, or nil if there is none.
func (c *Cluster) RandomNode(rng *mathrand.Rand) *Node {
	var live []*Node
	for _, n := range c.Nodes() {
		if n.Running() && !n.Stopped() {
			live = append(live, n)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return live[rng.IntN(len(live))]
}

// Client returns a Kafka client of the broker with opts, closed when the
// test ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.brokerAddr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Produce writes records to topic (it sets each record's Topic) and waits
// for the broker to acknowledge them. Keyed records are partitioned as
// Kafka's default partitioner and basin place them (murmur2 of the key
// bytes); records without a key go to any partition. The topic must
// exist (CREATE STREAM creates it).
func (c *Cluster) Produce(t testing.TB, topic string, records ...*kgo.Record) {
	t.Helper()
	c.produce(t, &c.mu.producer, kgo.StickyKeyPartitioner(nil), topic, records)
}

// ProduceTo writes records to topic as Produce does, but each to the
// partition it names (Record.Partition), as a producer with another
// partitioner than Kafka's default would place it.
func (c *Cluster) ProduceTo(t testing.TB, topic string, records ...*kgo.Record) {
	t.Helper()
	c.produce(t, &c.mu.manual, kgo.ManualPartitioner(), topic, records)
}

// produce writes records to topic with the producer *cl, made with
// partitioner on first use; c.mu guards *cl.
func (c *Cluster) produce(t testing.TB, cl **kgo.Client, partitioner kgo.Partitioner, topic string, records []*kgo.Record) {
	t.Helper()
	c.mu.Lock()
	if *cl == nil {
		p, err := kgo.NewClient(kgo.SeedBrokers(c.brokerAddr), kgo.RecordPartitioner(partitioner))
		if err != nil {
			c.mu.Unlock()
			t.Fatal(err)
		}
		*cl = p
	}
	prod := *cl
	c.mu.Unlock()
	for _, r := range records {
		r.Topic = topic
	}
	ctx, cancel := context.WithTimeout(context.Background(), QueryTimeout)
	defer cancel()
	if err := prod.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatalf("testcluster: producing %d records to %s: %v", len(records), topic, err)
	}
}

// Eventually calls fn until it returns nil and fails the test with fn's
// last error if that takes longer than d (Timeout(d): scaled when the
// processes are race-built). It fails at once if a process of the
// cluster exits without being asked to.
func (c *Cluster) Eventually(t testing.TB, d time.Duration, fn func() error) {
	t.Helper()
	eventually(t, d, fn, c.crashes)
}

// Eventually calls fn until it returns nil and fails the test with fn's
// last error if that takes longer than Timeout(d) (internal/poll).
func Eventually(t testing.TB, d time.Duration, fn func() error) {
	t.Helper()
	eventually(t, d, fn, nil)
}

func eventually(t testing.TB, d time.Duration, fn func() error, crashes func() string) {
	t.Helper()
	poll.UntilOr(t, Timeout(d), fn, crashes)
}

// crashes describes the processes that exited without being asked to.
func (c *Cluster) crashes() string {
	var out []string
	for _, p := range c.processes() {
		if r := p.crashReport(); r != "" {
			out = append(out, r)
		}
	}
	return strings.Join(out, "; ")
}

// processes are the nodes, then the broker.
func (c *Cluster) processes() []*Process {
	var ps []*Process
	for _, n := range c.Nodes() {
		ps = append(ps, n.Process)
	}
	if c.broker != nil {
		ps = append(ps, c.broker)
	}
	return ps
}

// cleanup kills every process still running (under make cover, stops
// it with SIGTERM first: Process.end), nodes before the broker, reports
// crashes, and prints the logs' tails if the test failed.
func (c *Cluster) cleanup() {
	c.mu.Lock()
	producers := []*kgo.Client{c.mu.producer, c.mu.manual}
	c.mu.producer, c.mu.manual = nil, nil
	c.mu.Unlock()
	for _, p := range producers {
		if p != nil {
			p.Close()
		}
	}
	var wg sync.WaitGroup
	for _, n := range c.Nodes() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.end()
		}()
	}
	wg.Wait()
	if c.broker != nil {
		c.broker.end()
	}
	if s := c.crashes(); s != "" {
		c.t.Errorf("testcluster: %s", s)
	}
	for _, p := range c.processes() {
		if c.t.Failed() {
			c.t.Log(p.Tail(tailLines))
		}
		p.log.close()
	}
}
