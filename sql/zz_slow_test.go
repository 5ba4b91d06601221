package sql

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSlowCorpus(t *testing.T) {
	dir := os.Getenv("CORPUS")
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines := strings.SplitN(string(b), "\n", 3)
		s := strings.TrimSuffix(strings.TrimPrefix(lines[1], "string("), ")")
		text, err := strconv.Unquote(s)
		if err != nil {
			continue
		}
		start := time.Now()
		Parse(text)
		if d := time.Since(start); d > 5*time.Millisecond {
			t.Logf("%v %d %q", d, len(text), text[:min(len(text), 120)])
		}
	}
}
