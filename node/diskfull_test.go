package node

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// mountSmallFS mounts a tmpfs of size (mount's syntax, "16m") at a new
// directory under t's temporary directory and unmounts it when the test
// ends, after the cleanups registered later (the node's Close) have run.
// It needs root, which the tests run as; it fails rather than skips.
func mountSmallFS(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a %s tmpfs at %s (the test needs root): %v: %s", size, dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillFS writes a file in dir until the file system is full, and returns
// its path.
func fillFS(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			return path
		}
	}
}

// TestDiskFullInsert fills the file system under a node's data dir (the
// embedded broker's log is there) and INSERTs: the statement fails with
// 53100 disk_full naming the file the broker could not write, not
// 58030 with the broker's UNKNOWN_SERVER_ERROR; the node stays up, and
// once space is freed the same INSERT succeeds and nothing written
// before is lost.
func TestDiskFullInsert(t *testing.T) {
	dir := mountSmallFS(t, "32m")
	n := startNode(t, dir)
	conn := connect(t, n.PGAddr())
	mustExec(t, conn, `CREATE STREAM df_events (id BIGINT KEY, body VARCHAR) WITH (kafka_topic='df_events', value_format='json', partitions=1)`)
	mustExec(t, conn, `CREATE TABLE df_counts AS SELECT id, COUNT(*) AS n FROM df_events GROUP BY id`)
	mustExec(t, conn, `INSERT INTO df_events (id, body) VALUES (1, 'before')`)

	filler := fillFS(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// 256 KiB of random text (the producer compresses) needs pages the
	// full file system does not have.
	noise := make([]byte, 192<<10)
	_, _ = rand.Read(noise)
	insert := `INSERT INTO df_events (id, body) VALUES (2, '` + base64.StdEncoding.EncodeToString(noise) + `')`
	_, err := conn.Exec(ctx, insert)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53100" || !strings.Contains(pe.Message, dir) ||
		!strings.Contains(pe.Message, "no space left on device") {
		t.Fatalf("INSERT on a full disk: %v, want 53100 naming a file under %s", err, dir)
	}
	t.Logf("INSERT on a full disk: %s (%s; %s)", pe.Message, pe.Detail, pe.Hint)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, insert); err != nil {
		t.Fatalf("INSERT once space is free: %v", err)
	}
	got, err := queryText(ctx, conn, `SELECT id FROM df_events ORDER BY id LIMIT 2`, false)
	if err != nil || got != "1\n2\n" {
		t.Errorf("df_events after the disk filled and was freed: %q %v, want ids 1 and 2", got, err)
	}
	// The view over the stream, whose task met the full disk too (or
	// not: the broker refused the record first), counts each record once.
	eventually(t, 30*time.Second, func() error {
		got, err := queryText(ctx, conn, `SELECT id, n FROM df_counts ORDER BY id`, false)
		if err != nil {
			return err
		}
		if want := "1|1\n2|1\n"; got != want {
			return fmt.Errorf("df_counts: %q, want %q", got, want)
		}
		return nil
	})
}
