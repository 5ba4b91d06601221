package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	basinexec "github.com/basindb/basin/exec"
)

// configSettings returns the settings of `basin serve --config path`.
func configSettings(t *testing.T, path string) *viper.Viper {
	t.Helper()
	cmd := newServe()
	if err := cmd.Flags().Set("config", path); err != nil {
		t.Fatal(err)
	}
	v, err := settings(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestUsersSetting reads users from each config format: names keep
// their case (viper would fold them), and BASIN_USERS overrides the
// file.
func TestUsersSetting(t *testing.T) {
	dir := t.TempDir()
	want := map[string]string{"Alice": "pw one", "bob": "SCRAM-SHA-256$4096:c2FsdA==$a2V5:a2V5", "carol": "012345"}
	files := map[string]string{
		"basin.yaml": "auth: scram\nusers:\n  Alice: pw one\n  bob: SCRAM-SHA-256$4096:c2FsdA==$a2V5:a2V5\n  carol: \"012345\"\n",
		"basin.toml": "auth = \"scram\"\n[users]\nAlice = \"pw one\"\nbob = \"SCRAM-SHA-256$4096:c2FsdA==$a2V5:a2V5\"\ncarol = \"012345\"\n",
		"basin.json": `{"auth": "scram", "users": {"Alice": "pw one", "bob": "SCRAM-SHA-256$4096:c2FsdA==$a2V5:a2V5", "carol": "012345"}}`,
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		v := configSettings(t, path)
		if v.GetString("auth") != "scram" {
			t.Errorf("%s: auth %q", name, v.GetString("auth"))
		}
		got, err := usersSetting(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != len(want) {
			t.Errorf("%s: got %v", name, got)
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: %s = %q, want %q", name, k, got[k], w)
			}
		}
	}

	t.Setenv("BASIN_USERS", `{"Dave": "env pw"}`)
	got, err := usersSetting(configSettings(t, filepath.Join(dir, "basin.yaml")))
	if err != nil || len(got) != 1 || got["Dave"] != "env pw" {
		t.Errorf("BASIN_USERS: %v %v", got, err)
	}
	t.Setenv("BASIN_USERS", `Dave=pw`)
	if _, err := usersSetting(configSettings(t, filepath.Join(dir, "basin.yaml"))); err == nil || !strings.Contains(err.Error(), "JSON object") {
		t.Errorf("bad BASIN_USERS: %v", err)
	}
}

func TestUsersSettingRejectsNesting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "basin.yaml")
	for _, text := range []string{"users:\n  alice:\n    password: x\n", "users:\n  alice: 012345\n"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := usersSetting(configSettings(t, path)); err == nil || !strings.Contains(err.Error(), `"alice"`) ||
			!strings.Contains(err.Error(), "quote it") {
			t.Errorf("%q: got %v", text, err)
		}
	}
}

// execute runs the basin command line with args and stdin.
func execute(args []string, stdin string) (stdout string, err error) {
	root := newRoot()
	var out bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	err = root.Execute()
	return out.String(), err
}

func TestPasswd(t *testing.T) {
	out, err := execute([]string{"passwd"}, "s3cret pw\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "SCRAM-SHA-256$4096:") || strings.Count(out, "$") != 2 || strings.Contains(out, "s3cret") {
		t.Errorf("got %q", out)
	}
	out, err = execute([]string{"passwd", "--iterations", "10000"}, "s3cret pw")
	if err != nil || !strings.HasPrefix(out, "SCRAM-SHA-256$10000:") {
		t.Errorf("--iterations: %q %v", out, err)
	}
	if _, err := execute([]string{"passwd"}, ""); err == nil {
		t.Error("an empty password was accepted")
	}
}

// TestServeRefusesRemoteTrust checks the refusal reaches the command
// line before anything starts.
func TestServeRefusesRemoteTrust(t *testing.T) {
	_, err := execute([]string{"serve", "--pg-addr", "0.0.0.0:5433", "--data-dir", t.TempDir(), "--http-addr", "off"}, "")
	if err == nil || !strings.Contains(err.Error(), "--auth scram") {
		t.Fatalf("got %v", err)
	}
	_, err = execute([]string{"serve", "--auth", "password", "--data-dir", t.TempDir(), "--http-addr", "off"}, "")
	if err == nil || !strings.Contains(err.Error(), "only over TLS") {
		t.Fatalf("password without TLS: %v", err)
	}
}

// TestServeRefusesNegativeCaches checks that --row-cache-mb or
// --scan-cache-mb below 0 is refused at start, naming the setting and
// what to give instead.
func TestServeRefusesNegativeCaches(t *testing.T) {
	for _, cache := range []string{"row", "scan"} {
		_, err := execute([]string{"serve", "--" + cache + "-cache-mb", "-1", "--data-dir", t.TempDir(), "--http-addr", "off"}, "")
		if err == nil || !strings.Contains(err.Error(), cache+"-cache-mb = -1") || !strings.Contains(err.Error(), "0 to turn the "+cache+" cache off") {
			t.Fatalf("--%s-cache-mb -1: got %v", cache, err)
		}
	}
}

// writeFile writes a file under dir and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantErr checks that err is an error whose text holds every one of
// parts.
func wantErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not say %q", what, err, p)
		}
	}
}

// refusingRemoteTrust is a serve command line that node.Start refuses at
// once (trust on a non-loopback address): a start that let a bad setting
// through fails with that error, instead of running a node.
func refusingRemoteTrust(t *testing.T, extra ...string) []string {
	return append([]string{"serve", "--pg-addr", "0.0.0.0:5433", "--data-dir", t.TempDir(), "--http-addr", "off"}, extra...)
}

// TestServeRefusesInvalidEnv checks that a BASIN_* variable its setting
// cannot take stops serve before it starts, naming the variable, the
// value and what the setting takes, as a bad flag would.
func TestServeRefusesInvalidEnv(t *testing.T) {
	for _, c := range []struct{ env, value, takes string }{
		{"BASIN_SESSION_TIMEOUT", "forever", "a duration"},
		{"BASIN_HEARTBEAT_INTERVAL", "100", "a duration"}, // no unit
		{"BASIN_DEFAULT_PARTITIONS", "lots", "a whole number"},
		{"BASIN_ACCEPTABLE_RECOVERY_LAG", "1.5", "a whole number"},
		{"BASIN_ALLOW_TRUST_REMOTE", "maybe", "true or false"},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(c.env, c.value)
			_, err := execute(refusingRemoteTrust(t), "")
			wantErr(t, c.env, err, c.env, `"`+c.value+`"`, c.takes)
		})
	}
	// The same values given as flags are refused by the flag parser; a
	// valid variable is taken.
	t.Setenv("BASIN_SESSION_TIMEOUT", "7s")
	if _, err := execute(refusingRemoteTrust(t), ""); err == nil || !strings.Contains(err.Error(), "--auth scram") {
		t.Errorf("valid BASIN_SESSION_TIMEOUT: got %v, want the remote-trust refusal", err)
	}
}

// TestServeRefusesInvalidConfigValue checks the same for config-file
// values, in each format, naming the file, the key and the value.
func TestServeRefusesInvalidConfigValue(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, text, key, value, takes string }{
		{"a.yaml", "default-partitions: lots\n", "default-partitions", `"lots"`, "a whole number"},
		{"b.yaml", "session-timeout: 6\n", "session-timeout", "6", "a duration"},
		{"c.yaml", "max-connections: 2.5\n", "max-connections", "2.5", "a whole number"},
		{"d.yaml", "pg-addr:\n  host: x\n", "pg-addr", "a map", "a string"},
		{"e.toml", "session-timeout = \"forever\"\n", "session-timeout", `"forever"`, "a duration"},
		{"f.json", `{"allow-trust-remote": "sometimes"}`, "allow-trust-remote", `"sometimes"`, "true or false"},
		{"g.yaml", "users: alice\n", "users", `"alice"`, "a map of user name"},
		{"h.yaml", "cluster-secret: 12345\n", "cluster-secret", "12345", "quote it"},
	} {
		path := writeFile(t, dir, c.name, c.text)
		_, err := execute(refusingRemoteTrust(t, "--config", path), "")
		wantErr(t, c.name, err, "config file "+path, c.key+": "+c.value+" is not valid", c.takes)
	}
	// Valid values in every format, including JSON's numbers (floats to
	// the parser) and a YAML list of brokers, are taken.
	for name, text := range map[string]string{
		"ok.yaml": "default-partitions: 8\nsession-timeout: 2s\nallow-trust-remote: false\nbrokers: [a:1, b:2]\n",
		"ok.toml": "default-partitions = 8\nsession-timeout = \"2s\"\n",
		"ok.json": `{"default-partitions": 8, "session-timeout": "2s", "max-connections": 10}`,
	} {
		v := configSettings(t, writeFile(t, dir, name, text))
		if v.GetInt("default-partitions") != 8 {
			t.Errorf("%s: default-partitions %d", name, v.GetInt("default-partitions"))
		}
	}
}

// TestConfigUnknownKey checks that a config key that is no setting is an
// error naming the nearest one, that users and cluster-secret (no flag)
// are settings of serve, and that basin broker checks its own keys.
func TestConfigUnknownKey(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ cmd, name, text, key, want string }{
		{"serve", "a.yaml", "pg_addr: 127.0.0.1:6543\n", "pg_addr", `did you mean "pg-addr"?`},
		{"serve", "b.toml", "sesion-timeout = \"1s\"\n", "sesion-timeout", `did you mean "session-timeout"?`},
		{"serve", "c.json", `{"Default-Partition": 3}`, "default-partition", `did you mean "default-partitions"?`},
		{"serve", "d.yaml", "users_:\n  alice: pw\n", "users_", `did you mean "users"?`},
		{"serve", "e.yaml", "colour: blue\n", "colour", "basin serve takes acceptable-recovery-lag, "},
		{"serve", "f.yaml", "config: other.yaml\n", "config", "cannot name another"},
		{"broker", "g.yaml", "adr: 127.0.0.1:9093\n", "adr", `did you mean "addr"?`},
		{"broker", "h.yaml", "users:\n  alice: pw\n", "users", "basin broker takes addr, data-dir, log-level"},
	} {
		path := writeFile(t, dir, c.name, c.text)
		var err error
		if c.cmd == "serve" {
			_, err = execute(refusingRemoteTrust(t, "--config", path), "")
		} else {
			// The broker would start: check its settings only.
			cmd := newBroker()
			if err := cmd.Flags().Set("config", path); err != nil {
				t.Fatal(err)
			}
			_, err = settings(cmd)
		}
		if c.key == "config" {
			wantErr(t, c.name, err, "config file "+path, c.want)
			continue
		}
		wantErr(t, c.name, err, "config file "+path, `unknown key "`+c.key+`"`, c.want)
	}
	path := writeFile(t, dir, "ok.yaml", "cluster-secret: s3cret\nusers:\n  alice: pw\n")
	if v := configSettings(t, path); v.GetString("cluster-secret") != "s3cret" {
		t.Errorf("cluster-secret: %q", v.GetString("cluster-secret"))
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"pg_addr", "pg-addr", 1}, {"addr", "pg-addr", 3}, {"kitten", "sitting", 3}, {"", "abc", 3}} {
		if d := editDistance(c.a, c.b); d != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, d, c.d)
		}
	}
}

func TestVersion(t *testing.T) {
	out, err := execute([]string{"version"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "basin " + basinexec.Version + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"; out != want {
		t.Errorf("basin version = %q, want %q", out, want)
	}
	if out, err := execute([]string{"--version"}, ""); err != nil || !strings.Contains(out, basinexec.Version) {
		t.Errorf("basin --version = %q, %v", out, err)
	}
}

// TestHelpNamesSettings checks that --help gives each flag's
// environment variable and config key.
func TestHelpNamesSettings(t *testing.T) {
	for _, sub := range []string{"serve", "broker"} {
		out, err := execute([]string{sub, "--help"}, "")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		cmd, _, _ := newRoot().Find([]string{sub})
		cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if len(names) < 4 {
			t.Fatalf("%s: flags %v", sub, names)
		}
		for _, name := range names {
			want := "(env " + envName(name) + ", config " + name + ")"
			if name == "config" {
				want = "(env BASIN_CONFIG)"
			}
			if !strings.Contains(out, want) {
				t.Errorf("basin %s --help does not say %q", sub, want)
			}
		}
		if sub == "serve" && (!strings.Contains(out, "BASIN_USERS") || !strings.Contains(out, "BASIN_CLUSTER_SECRET")) {
			t.Errorf("basin serve --help does not name the settings without a flag:\n%s", out)
		}
	}
}

// serveLines runs basin serve with args until ctx is done, sending each
// line it writes to stderr on the returned channel; the channel closes
// when serve returns, and done then has its error.
func serveLines(ctx context.Context, args []string) (lines <-chan string, done <-chan error) {
	pr, pw := io.Pipe()
	ch, errc := make(chan string, 1024), make(chan error, 1)
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(pw)
	go func() {
		err := root.ExecuteContext(ctx)
		pw.Close()
		errc <- err
	}()
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			ch <- sc.Text()
		}
		io.Copy(io.Discard, pr) // unblock serve if a line was too long
	}()
	return ch, errc
}

// TestServeBrokerAddrFallback holds the default broker port (made a free
// port of the test's own, so the test does not depend on 9092) and
// checks that serve falls back to another port, says so, and states its
// effective settings (some from the environment and the config file) on
// the line before the ready line.
func TestServeBrokerAddrFallback(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	saved := defaultBrokerAddr
	defaultBrokerAddr = held.Addr().String()
	t.Cleanup(func() { defaultBrokerAddr = saved })

	dir := t.TempDir()
	t.Setenv("BASIN_HEARTBEAT_INTERVAL", "250ms")
	config := writeFile(t, dir, "basin.yaml", "default-partitions: 3\nsession-timeout: 7s\n")
	dataDir := filepath.Join(dir, "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines, done := serveLines(ctx, []string{"serve", "--data-dir", dataDir, "--pg-addr", "127.0.0.1:0", "--http-addr", "off",
		"--log-level", "warn", "--config", config})

	var log []string
	var settingsLine, readyLine string
	timeout := time.After(2 * time.Minute)
	for readyLine == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("serve returned before it was ready: %v\n%s", <-done, strings.Join(log, "\n"))
			}
			log = append(log, line)
			switch {
			case strings.HasPrefix(line, "basin settings: "):
				settingsLine = line
			case strings.Contains(line, " ready: psql -h "):
				readyLine = line
			}
		case <-timeout:
			t.Fatalf("no ready line within 2 minutes:\n%s", strings.Join(log, "\n"))
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}

	warned := false
	for _, line := range log {
		if strings.Contains(line, "default address is taken") && strings.Contains(line, "taken="+held.Addr().String()) {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning that %s was taken:\n%s", held.Addr(), strings.Join(log, "\n"))
	}
	m := regexp.MustCompile(`broker-addr (127\.0\.0\.1:\d+) \(embedded broker: Kafka producers and consumers connect here; ` +
		regexp.QuoteMeta(held.Addr().String()) + ` was taken\)`).FindStringSubmatch(settingsLine)
	if m == nil || m[1] == held.Addr().String() {
		t.Fatalf("settings line does not give the fallback broker address: %q", settingsLine)
	}
	for _, want := range []string{"data-dir " + dataDir + ",", "pg-addr 127.0.0.1:", "http-addr off,", "default-partitions 3,",
		"auth trust,", "session-timeout 7s,", "heartbeat-interval 250ms"} {
		if !strings.Contains(settingsLine, want) {
			t.Errorf("settings line %q does not say %q", settingsLine, want)
		}
	}
	if !regexp.MustCompile(`^basin \S+ ready: psql -h 127\.0\.0\.1 -p \d+ -U basin basin$`).MatchString(readyLine) {
		t.Errorf("ready line changed: %q", readyLine)
	}
}

// TestServeGivenBrokerAddrTaken checks that a broker address the user
// gave (flag or environment) is not replaced when taken: serve fails.
func TestServeGivenBrokerAddrTaken(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	_, err = execute([]string{"serve", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0", "--http-addr", "off", "--broker-addr", addr}, "")
	wantErr(t, "--broker-addr", err, "embedded broker", addr)
	t.Setenv("BASIN_BROKER_ADDR", addr)
	_, err = execute([]string{"serve", "--data-dir", t.TempDir(), "--pg-addr", "127.0.0.1:0", "--http-addr", "off"}, "")
	wantErr(t, "BASIN_BROKER_ADDR", err, "embedded broker", addr)
}

// TestMakeRunAddrs checks that make run passes its address variables
// and ARGS to basin serve, and runs as before without them.
func TestMakeRunAddrs(t *testing.T) {
	if _, err := osexec.LookPath("make"); err != nil {
		t.Fatal("make is not installed: make run is what this checks")
	}
	dryRun := func(vars ...string) string {
		out, err := osexec.Command("make", append([]string{"-n", "-C", "../..", "run"}, vars...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("make -n run %v: %v\n%s", vars, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, " serve ") {
				return strings.Join(strings.Fields(line), " ")
			}
		}
		t.Fatalf("make -n run %v: no serve command:\n%s", vars, out)
		return ""
	}
	if got, want := dryRun(), "./bin/basin serve --data-dir ./basin-data"; got != want {
		t.Errorf("make run: %q, want %q", got, want)
	}
	got := dryRun("PG_ADDR=127.0.0.1:6543", "HTTP_ADDR=127.0.0.1:8543", "BROKER_ADDR=127.0.0.1:9192", "ARGS=--log-level debug --cluster dev")
	want := "./bin/basin serve --data-dir ./basin-data --pg-addr 127.0.0.1:6543 --http-addr 127.0.0.1:8543 --broker-addr 127.0.0.1:9192 --log-level debug --cluster dev"
	if got != want {
		t.Errorf("make run with addresses: %q, want %q", got, want)
	}
}
