package docs

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/internal/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// Timeouts: generous, since the machine may be busy (and longer for a
// race-built basin); a block that finishes is never waited for longer.
var (
	nodeStartTimeout = testcluster.Timeout(60 * time.Second)
	blockTimeout     = testcluster.Timeout(3 * time.Minute)
	eventuallyWithin = testcluster.Timeout(30 * time.Second)
	stopTimeout      = testcluster.Timeout(30 * time.Second)
)

// defaultPorts are the ports the documents use for the node they talk
// to: what `make run` listens on.
var defaultPorts = []string{"5433", "8433", "9092"}

// documents lists the files TestDocs runs, README.md first.
func documents(t *testing.T) []*document {
	paths := []string{"../README.md"}
	more, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(more)
	paths = append(paths, more...)
	var docs []*document
	for _, p := range paths {
		name := "docs/" + p // as the repository names it, for messages
		if p == "../README.md" {
			name = "README.md"
		}
		d, err := readDocument(p, name)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	return docs
}

// tools are the programs the documents run, and where to get them.
var tools = map[string]string{
	"bash":       "bash",
	"psql":       "Debian's postgresql-client",
	"pg_isready": "Debian's postgresql-client",
	"kcat":       "Debian's kcat",
}

// TestDocs runs every block of README.md and docs/*.md; see doc.go.
func TestDocs(t *testing.T) {
	for tool, pkg := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: the docs' examples use it (install %s; .ci/run does)", tool, pkg)
		}
	}
	for _, d := range documents(t) {
		t.Run(d.name, func(t *testing.T) {
			if !checkMarked(t, d) {
				t.FailNow()
			}
			r := newRun(t, d, testcluster.Binary(t))
			for _, sec := range d.sections {
				if !sectionRuns(sec) {
					continue
				}
				name := sec.title
				if name == "" {
					name = "intro"
				}
				if !t.Run(name, func(t *testing.T) { r.section(t, sec) }) {
					return // later sections build on this one
				}
			}
		})
	}
}

// checkMarked fails the test for every block of d that neither runs nor
// is marked skipped, all at once, before anything runs.
func checkMarked(t *testing.T, d *document) bool {
	ok := true
	var prev *block
	for _, sec := range d.sections {
		for _, b := range sec.blocks {
			if _, err := kindOf(b, prev); err != nil {
				t.Errorf("%s: %v", b.where(), err)
				ok = false
			}
			prev = b
		}
	}
	return ok
}

func sectionRuns(sec *section) bool {
	for _, b := range sec.blocks {
		if b.dir.skip == "" {
			return true
		}
	}
	return false
}

// Block kinds.
const (
	kindSkip       = "skip"
	kindSQL        = "sql"
	kindShell      = "sh"
	kindTranscript = "transcript"
	kindOutput     = "output"    // output of the block before
	kindOutputOf   = "output of" // output of a hidden script
	kindLog        = "log"
	kindFile       = "file"
	kindServers    = "servers"
	kindRestart    = "restart" // a sh block that stops and starts the node
	kindSetup      = "setup"
)

// kindOf says how a block runs, or why it cannot.
func kindOf(b, prev *block) (string, error) {
	d := b.dir
	switch {
	case b.info == "setup":
		return kindSetup, nil
	case d.skip != "":
		return kindSkip, nil
	case d.outputOf != "":
		return kindOutputOf, nil
	case d.output:
		if prev == nil || prev.dir.skip != "" || (prev.info != "sql" && prev.info != "sh" && prev.info != "console" && !isTranscript(prev.text)) {
			return "", fmt.Errorf("an output block must follow a sql or sh block that runs")
		}
		return kindOutput, nil
	case d.log:
		return kindLog, nil
	case d.file != "":
		return kindFile, nil
	case d.servers:
		return kindServers, nil
	case d.restart:
		if b.info != "sh" || !serveLineRE.MatchString(lastLine(b.text)) {
			return "", fmt.Errorf("a restart block is a sh block whose last line is the node's basin serve")
		}
		return kindRestart, nil
	}
	switch b.info {
	case "sql":
		return kindSQL, nil
	case "sh", "console":
		return kindShell, nil
	case "":
		if isTranscript(b.text) {
			return kindTranscript, nil
		}
	}
	return "", fmt.Errorf("a ```%s block that the doc test does not run: mark it <!-- doctest: skip (why) --> or with how to check it (docs/doc.go)", b.info)
}

// run is the state of one document's run.
type run struct {
	doc  *document
	bin  string
	work string   // the working directory of everything the document runs
	env  []string // the environment of everything it runs

	ports    map[string]string // a port the document names → the real one
	portRE   *regexp.Regexp
	node     *process // the document's node, when it needs one
	nodeArgs []string
	sh       *shell
	psql     []string // the psql command sql blocks run in (after substitution)
	prev     *block
	last     *lastRun // the last block run, for an output block after it
}

type lastRun struct {
	b       *block
	lastOut string // what it printed (sql: its last statement)
	ordered bool   // whether that output is in a defined order
}

func newRun(t *testing.T, d *document, bin string) *run {
	work := t.TempDir()
	r := &run{doc: d, bin: bin, work: work}
	for _, dir := range []string{"bin", "tmp", "var/lib"} {
		if err := os.MkdirAll(filepath.Join(work, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bin, filepath.Join(work, "bin", "basin")); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "BASIN_") || strings.HasPrefix(kv, "PATH=") {
			continue
		}
		r.env = append(r.env, kv)
	}
	r.env = append(r.env, "PATH="+filepath.Join(work, "bin")+":"+os.Getenv("PATH"),
		"PSQLRC=/dev/null", "PGCONNECT_TIMEOUT=10", "PAGER=", "PSQL_PAGER=")
	r.mapPorts()
	t.Cleanup(func() {
		if r.sh != nil {
			r.sh.close()
		}
		if t.Failed() {
			r.printLogs(t)
		}
		if r.node != nil {
			if t.Failed() {
				t.Logf("the node's log (last 60 lines):\n%s", r.node.log.tail(60))
			}
			r.node.kill()
		}
	})
	if r.needsNode() {
		r.startNode(t)
	}
	r.psql = strings.Fields(r.subst("psql -h 127.0.0.1 -p 5433 -U basin basin"))
	return r
}

// printLogs prints the end of every log file the document's commands
// wrote under /tmp (the README's cluster writes its nodes' logs there).
func (r *run) printLogs(t *testing.T) {
	_ = filepath.WalkDir(filepath.Join(r.work, "tmp"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil || bytes.IndexByte(b, 0) >= 0 {
			return nil // not a text log: the broker's or Pebble's
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		rel, _ := filepath.Rel(r.work, path)
		t.Logf("%s (last 40 lines):\n%s", rel, strings.Join(lines, "\n"))
		return nil
	})
}

var portRefRE = regexp.MustCompile(`(?:127\.0\.0\.1|localhost|0\.0\.0\.0):(\d{2,5})\b|-p (\d{4,5})\b`)

// mapPorts finds every port the document names (in what it runs or
// shows). Each gets a free port of this machine when first used (subst),
// so that little time passes between finding it free and using it; the
// node's ports are taken when the node starts.
func (r *run) mapPorts() {
	r.ports = map[string]string{}
	names := map[string]bool{}
	for _, p := range defaultPorts {
		names[p] = true
	}
	for _, sec := range r.doc.sections {
		for _, b := range sec.blocks {
			if b.dir.skip != "" {
				continue
			}
			for _, text := range []string{b.text, b.dir.outputOf} {
				for _, m := range portRefRE.FindAllStringSubmatch(text, -1) {
					for _, p := range m[1:] {
						if p != "" && p != "0" {
							names[p] = true
						}
					}
				}
			}
		}
	}
	var alts []string
	for p := range names {
		alts = append(alts, p)
	}
	sort.Strings(alts)
	r.portRE = regexp.MustCompile(`\b(` + strings.Join(alts, "|") + `)\b`)
}

// port returns the real port standing for the document's port p,
// choosing one on first use: free now, and not standing for another.
func (r *run) port(p string) string {
	if real, ok := r.ports[p]; ok {
		return real
	}
	for {
		real, err := freePort()
		if err != nil {
			panic(fmt.Sprintf("docs: no free port: %v", err)) // subst runs in subtests: no t.Fatal of the document's test
		}
		if !slices.Contains(slices.Collect(maps.Values(r.ports)), real) {
			r.ports[p] = real
			return real
		}
	}
}

// subst moves the document's ports and paths out of the way (doc.go).
func (r *run) subst(s string) string {
	s = r.portRE.ReplaceAllStringFunc(s, r.port)
	s = strings.ReplaceAll(s, "/tmp/", r.work+"/tmp/")
	s = strings.ReplaceAll(s, "/var/lib/", r.work+"/var/lib/")
	return s
}

func (r *run) needsNode() bool {
	for _, sec := range r.doc.sections {
		for _, b := range sec.blocks {
			switch k, _ := kindOf(b, nil); k {
			case kindSQL, kindShell, kindTranscript, kindLog, kindOutputOf, kindSetup, kindRestart:
				return true
			}
		}
	}
	return false
}

// startNode starts the document's node: basin serve with an embedded
// broker, on the ports that stand for 5433, 8433 and 9092, with its data
// dir at /var/lib/basin. A port taken in the meantime gets a new one,
// before the document has used it.
func (r *run) startNode(t *testing.T) {
	r.startNodeOn(t, true)
}

// startNodeOn starts the node; only a fresh one (nothing has used its
// data dir or ports yet) may move to other ports.
func (r *run) startNodeOn(t *testing.T, fresh bool) {
	dataDir := r.subst("/var/lib/basin")
	for attempt := 0; ; attempt++ {
		r.nodeArgs = []string{"serve", "--data-dir", dataDir,
			"--pg-addr", "127.0.0.1:" + r.port("5433"), "--http-addr", "127.0.0.1:" + r.port("8433"),
			"--broker-addr", "127.0.0.1:" + r.port("9092")}
		p, err := startProcess(r.work, r.env, r.bin, r.nodeArgs...)
		if err != nil {
			t.Fatal(err)
		}
		err = p.waitLog("ready: psql -h 127.0.0.1 -p "+r.port("5433")+" ", nodeStartTimeout)
		if err == nil {
			r.node = p
			return
		}
		p.kill()
		if fresh && attempt < 3 && strings.Contains(p.log.String(), "address already in use") {
			for _, port := range defaultPorts {
				delete(r.ports, port) // chosen anew
			}
			_ = os.RemoveAll(dataDir)
			continue
		}
		t.Fatalf("the document's node (basin %s): %v\n%s", strings.Join(r.nodeArgs, " "), err, p.log.tail(60))
	}
}

func (r *run) shell(t *testing.T) *shell {
	if r.sh == nil {
		sh, err := startShell(r.work, r.env)
		if err != nil {
			t.Fatal(err)
		}
		r.sh = sh
	}
	return r.sh
}

// section runs a section's blocks in order.
func (r *run) section(t *testing.T, sec *section) {
	for _, b := range sec.blocks {
		k, err := kindOf(b, r.prev)
		if err != nil {
			t.Fatalf("%s: %v", b.where(), err)
		}
		r.prev = b
		switch k {
		case kindSkip:
			t.Logf("%s: skipped: %s", b.where(), b.dir.skip)
		case kindSetup:
			r.runStatements(t, b, splitSQL(b.text, b.line+1))
		case kindSQL:
			r.runStatements(t, b, splitSQL(b.text, b.line+1))
		case kindTranscript:
			r.runStatements(t, b, splitTranscript(b.text, b.line+1))
		case kindShell:
			r.runShell(t, b)
		case kindOutput:
			r.checkOutput(t, b)
		case kindOutputOf:
			r.runOutputOf(t, b)
		case kindLog:
			r.checkLog(t, b)
		case kindFile:
			path := filepath.Join(r.work, b.dir.file)
			if err := os.WriteFile(path, []byte(r.subst(b.text)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		case kindServers:
			r.runServers(t, b)
		case kindRestart:
			r.restartNode(t, b)
		}
	}
}

// runStatements runs a sql block's (or a transcript's, or a setup
// comment's) statements in one psql session and checks each statement's
// output against what the page shows for it.
func (r *run) runStatements(t *testing.T, b *block, stmts []*statement) {
	if b.dir.eventually {
		for _, st := range stmts {
			if isWrite(st.text) {
				t.Fatalf("%s:%d: an eventually block is re-run, so it may only read: %s", b.file, st.line, st.text)
			}
		}
	}
	attempt := func() error {
		out, err := r.psqlScript(stmts)
		if err != nil {
			return err
		}
		return r.checkStatements(b, stmts, out)
	}
	if b.dir.eventually {
		testcluster.Eventually(t, eventuallyWithin, attempt)
		return
	}
	if err := attempt(); err != nil {
		t.Fatal(err)
	}
}

// sqlRun is the output of one psql session, cut at the markers between
// its statements: segment i is statement i's (1-based; 0 is what psql
// printed before the first).
type sqlRun struct {
	script   string
	all      string
	segments []string
}

func marker(i int) string { return fmt.Sprintf("@@doctest-statement-%d@@", i) }

func (r *run) psqlScript(stmts []*statement) (*sqlRun, error) {
	var sb strings.Builder
	sb.WriteString(`\echo ` + marker(0) + "\n")
	for i, st := range stmts {
		sb.WriteString(r.subst(st.text) + "\n")
		sb.WriteString(`\echo ` + marker(i+1) + "\n")
	}
	run := &sqlRun{script: sb.String()}
	ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
	defer cancel()
	args := append(append([]string{}, r.psql[1:]...), "-X", "-P", "pager=off")
	cmd := exec.CommandContext(ctx, r.psql[0], args...)
	cmd.Dir, cmd.Env = r.work, r.env
	cmd.Stdin = strings.NewReader(run.script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	run.all = out.String()
	if err != nil {
		return run, fmt.Errorf("%s failed: %v\n%s", strings.Join(r.psql, " "), err, run.all)
	}
	rest := run.all
	for i := 0; i <= len(stmts); i++ {
		before, after, ok := strings.Cut(rest, marker(i)+"\n")
		if !ok {
			return run, fmt.Errorf("psql did not get to statement %d:\n%s", i, run.all)
		}
		run.segments = append(run.segments, before)
		rest = after
	}
	return run, nil
}

var errorLineRE = regexp.MustCompile(`(?m)^(psql:[^:]*:\d+: )?(ERROR|FATAL):`)

func (r *run) checkStatements(b *block, stmts []*statement, run *sqlRun) error {
	vol := r.volatility(b)
	for i, st := range stmts {
		got := run.segments[i+1]
		if st.want == nil {
			if errorLineRE.MatchString(got) {
				return fmt.Errorf("%s:%d: the statement failed:\n%s\n%s", b.file, st.line, st.text, got)
			}
			continue
		}
		if !st.wantsError() && errorLineRE.MatchString(got) {
			return fmt.Errorf("%s:%d: the statement failed:\n%s\n%s", b.file, st.line, st.text, got)
		}
		want := parseOutput(strings.Split(r.subst(strings.Join(st.want, "\n")), "\n"))
		if err := compareOutput(want, parseOutput(strings.Split(got, "\n")), vol, hasOrderBy(st.text)); err != nil {
			return fmt.Errorf("%s:%d: the output is not what the page shows: %v\nstatement:\n%s\nshown:\n%s\npsql printed:\n%s",
				b.file, st.line, err, st.text, strings.Join(st.want, "\n"), got)
		}
	}
	r.last = &lastRun{b: b}
	if len(stmts) > 0 {
		r.last.lastOut = run.segments[len(stmts)]
		r.last.ordered = hasOrderBy(stmts[len(stmts)-1].text)
	}
	return nil
}

func (r *run) volatility(b *block) volatility {
	v := volatility{}
	for _, w := range b.dir.volatile {
		v[w] = true
	}
	return v
}

var orderByRE = regexp.MustCompile(`(?i)\border\s+by\b`)

func hasOrderBy(s string) bool { return orderByRE.MatchString(s) }

var writeRE = regexp.MustCompile(`(?i)^\s*(insert|create|drop|update|delete)\b`)

func isWrite(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--") {
			continue
		}
		return writeRE.MatchString(l)
	}
	return false
}

// psqlSessionRE finds a bare psql line: one that opens a session rather
// than running a command.
var psqlSessionRE = regexp.MustCompile(`^psql\s[^|<>]*$`)

// runShell sources a sh block into the document's shell under set -e.
func (r *run) runShell(t *testing.T, b *block) {
	script := r.subst(b.text)
	if b.dir.eventually {
		t.Fatalf("%s: eventually is for sql blocks", b.where())
	}
	out, _, err := r.shell(t).run(script, true, blockTimeout)
	if err != nil {
		t.Fatalf("%s: the shell block failed: %v\nblock:\n%s\noutput:\n%s\nshell:\n%s", b.where(), err, script, out, r.sh.p.log.String())
	}
	t.Logf("%s: ran; it printed:\n%s", b.where(), out)
	for _, line := range strings.Split(b.text, "\n") {
		line = strings.TrimSpace(line)
		if psqlSessionRE.MatchString(line) && !strings.Contains(line, " -c") && !strings.Contains(line, " -f") {
			r.psql = strings.Fields(r.subst(line))
		}
	}
	r.last = &lastRun{b: b, lastOut: out, ordered: hasOrderBy(b.text)}
}

// checkOutput compares an output block with what the block before it
// printed.
func (r *run) checkOutput(t *testing.T, b *block) {
	if r.last == nil || r.last.b != r.prevRun(b) {
		t.Fatalf("%s: an output block must follow the block whose output it is", b.where())
	}
	got := r.last.lastOut
	want := parseOutput(strings.Split(r.subst(b.text), "\n"))
	if err := compareOutput(want, parseOutput(strings.Split(got, "\n")), r.volatility(b), r.last.ordered); err != nil {
		t.Fatalf("%s: the output of %s is not what the page shows: %v\nshown:\n%s\nprinted:\n%s", b.where(), r.last.b.where(), err, b.text, got)
	}
}

// prevRun is the block before b in the document.
func (r *run) prevRun(b *block) *block {
	var prev *block
	for _, sec := range r.doc.sections {
		for _, x := range sec.blocks {
			if x == b {
				return prev
			}
			prev = x
		}
	}
	return nil
}

// runOutputOf runs a block's hidden script, without set -e (it shows an
// error, usually), and compares its output with the block.
func (r *run) runOutputOf(t *testing.T, b *block) {
	script := r.subst(b.dir.outputOf)
	out, _, err := r.shell(t).run(script, false, blockTimeout)
	if err != nil {
		t.Fatalf("%s: the hidden script failed: %v\nscript:\n%s\noutput:\n%s", b.where(), err, script, out)
	}
	want := parseOutput(strings.Split(r.subst(b.text), "\n"))
	if err := compareOutput(want, parseOutput(strings.Split(out, "\n")), r.volatility(b), false); err != nil {
		t.Fatalf("%s: the output of %q is not what the page shows: %v\nshown:\n%s\nprinted:\n%s", b.where(), script, err, b.text, out)
	}
}

// checkLog checks that each line of the block is in the node's log.
func (r *run) checkLog(t *testing.T, b *block) {
	if r.node == nil {
		t.Fatalf("%s: a log block needs the document's node", b.where())
	}
	vol := r.volatility(b)
	logLines := strings.Split(r.node.log.String(), "\n")
	for _, line := range strings.Split(r.subst(b.text), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		re := linePattern(collapse(line), vol)
		found := false
		for _, l := range logLines {
			if re.MatchString(collapse(l)) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("%s: the node's log has no line %q:\n%s", b.where(), line, r.node.log.tail(60))
		}
	}
}

var serveLineRE = regexp.MustCompile(`^(bin/)?basin serve .*--data-dir /var/lib/basin(\s|$)`)

func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// restartNode runs a block that restarts the document's node: the node
// stops (SIGTERM, a clean exit), the block's lines but the last run in
// the shell, and the last, the node's basin serve, is the test starting
// the node again on its data dir and ports.
func (r *run) restartNode(t *testing.T, b *block) {
	if r.node == nil {
		t.Fatalf("%s: a restart block needs the document's node", b.where())
	}
	if err := r.node.terminate(stopTimeout); err != nil {
		t.Fatalf("%s: stopping the node: %v\n%s", b.where(), err, r.node.log.tail(60))
	}
	lines := strings.Split(strings.TrimSpace(b.text), "\n")
	script := r.subst(strings.Join(lines[:len(lines)-1], "\n"))
	out, _, err := r.shell(t).run(script, true, blockTimeout)
	if err != nil {
		t.Fatalf("%s: the shell block failed: %v\nblock:\n%s\noutput:\n%s", b.where(), err, script, out)
	}
	r.node = nil
	r.startNodeOn(t, false)
}

var configFlagRE = regexp.MustCompile(`--config[ =](\S+)`)

// runServers starts each line of the block as a server, waits for its
// ready line and stops it with SIGTERM, expecting a clean exit. A server
// whose line and config file leave the HTTP or broker address to its
// default gets a free one from the environment, so that it does not take
// the machine's 8433 or 9092.
func (r *run) runServers(t *testing.T, b *block) {
	for i, line := range strings.Split(b.text, "\n") {
		code := strings.TrimSpace(line)
		if code == "" || strings.HasPrefix(code, "#") {
			continue
		}
		code = r.subst(code)
		mentioned := code
		if m := configFlagRE.FindStringSubmatch(code); m != nil {
			cfg, err := os.ReadFile(filepath.Join(r.work, m[1]))
			if err != nil {
				t.Fatalf("%s:%d: %v", b.file, b.line+1+i, err)
			}
			mentioned += "\n" + string(cfg)
		}
		env := append([]string{}, r.env...)
		for _, setting := range []string{"http-addr", "broker-addr"} {
			if !strings.Contains(mentioned, setting) {
				port, err := freePort()
				if err != nil {
					t.Fatal(err)
				}
				env = append(env, "BASIN_"+strings.ToUpper(strings.ReplaceAll(setting, "-", "_"))+"=127.0.0.1:"+port)
			}
		}
		p, err := startProcess(r.work, env, "bash", "-c", code)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.waitLog(" ready: psql ", nodeStartTimeout); err != nil {
			p.kill()
			t.Fatalf("%s:%d: %s: %v\n%s", b.file, b.line+1+i, code, err, p.log.tail(60))
		}
		if err := p.terminate(stopTimeout); err != nil {
			t.Fatalf("%s:%d: %s: SIGTERM: %v\n%s", b.file, b.line+1+i, code, err, p.log.tail(60))
		}
	}
}
