package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/viper"
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

// TestServeRefusesNegativeRowCache checks that --row-cache-mb below 0 is
// refused at start, naming the setting and what to give instead.
func TestServeRefusesNegativeRowCache(t *testing.T) {
	_, err := execute([]string{"serve", "--row-cache-mb", "-1", "--data-dir", t.TempDir(), "--http-addr", "off"}, "")
	if err == nil || !strings.Contains(err.Error(), "row-cache-mb = -1") || !strings.Contains(err.Error(), "0 to turn the row cache off") {
		t.Fatalf("got %v", err)
	}
}
