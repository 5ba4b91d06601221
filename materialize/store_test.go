package materialize

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain lets the test binary double as the helper processes of the
// crash and lock tests, and fails a run whose goroutines outlive it.
func TestMain(m *testing.M) {
	switch os.Getenv("MATERIALIZE_TEST_HELPER") {
	case "":
		goleak.VerifyTestMain(m)
	case "writer":
		helperWriter(os.Getenv("MATERIALIZE_TEST_DIR"))
	case "hold":
		helperHold(os.Getenv("MATERIALIZE_TEST_DIR"))
	}
	os.Exit(0)
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func openTest(t testing.TB, dir string) *DB {
	t.Helper()
	return openTestOpts(t, Options{Dir: dir})
}

func openTestOpts(t testing.TB, opts Options) *DB {
	t.Helper()
	opts.Logger = quietLogger()
	db, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func key(t testing.TB, vals ...any) []byte { return mustKey(t, vals...) }

func get(t testing.TB, s *StoreReader, k []byte) (string, bool) {
	t.Helper()
	v, ok, err := s.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(v), ok
}

func getCheckpoint(t testing.TB, s *StoreReader) Checkpoint {
	t.Helper()
	cp, err := s.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// scan returns "k=v" for every key of the store in [lower, upper).
func scan(t testing.TB, s *StoreReader, lower, upper []byte) []string {
	t.Helper()
	it, err := s.NewIter(lower, upper)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for valid := it.First(); valid; valid = it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func commit(t testing.TB, s *Store, cp Checkpoint, kvs ...string) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	for i := 0; i < len(kvs); i += 2 {
		if kvs[i+1] == "<del>" {
			b.Delete([]byte(kvs[i]))
		} else {
			b.Set([]byte(kvs[i]), []byte(kvs[i+1]))
		}
	}
	if err := b.Commit(cp); err != nil {
		t.Fatal(err)
	}
}

func TestCommitIsAtomic(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	s := db.Store(StoreID{"v", 0})
	if cp := getCheckpoint(t, &s.StoreReader); cp.ChangelogOffset != 0 || cp.Position != nil {
		t.Fatalf("fresh store: checkpoint %+v, want zero", cp)
	}

	b := s.NewBatch()
	b.Set([]byte("a"), []byte("1"))
	b.Set([]byte("b"), []byte("2"))
	b.Delete([]byte("c"))
	if b.Len() != 3 || b.Size() == 0 {
		t.Fatalf("Len %d Size %d", b.Len(), b.Size())
	}
	// Nothing is visible before Commit.
	if _, ok := get(t, &s.StoreReader, []byte("a")); ok {
		t.Fatal("uncommitted write is visible")
	}
	cp := Checkpoint{ChangelogOffset: 3, Input: map[string]map[int32]int64{"src": {0: 9}},
		Position: Position{"src": {0: 9}}, UpdatedAt: time.Unix(1700000000, 0).UTC()}
	if err := b.Commit(cp); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, &s.StoreReader, nil, nil); strings.Join(got, " ") != "a=1 b=2" {
		t.Fatalf("after commit: %v", got)
	}
	checkpointsEqual(t, getCheckpoint(t, &s.StoreReader), cp)

	// A batch ends at Commit: a second Commit fails, further writes panic
	// (the pebble batch has been recycled), Close is a no-op.
	if err := b.Commit(cp); err == nil {
		t.Fatal("second Commit succeeded")
	}
	b.Close()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Set on a committed batch did not panic")
			}
		}()
		b.Set([]byte("x"), nil)
	}()

	// A discarded batch leaves nothing behind.
	b2 := s.NewBatch()
	b2.Set([]byte("z"), []byte("9"))
	b2.Close()
	if _, ok := get(t, &s.StoreReader, []byte("z")); ok {
		t.Fatal("write of a closed batch is visible")
	}
	if got := getCheckpoint(t, &s.StoreReader).ChangelogOffset; got != 3 {
		t.Fatalf("checkpoint moved to %d after a discarded batch", got)
	}

	// An empty batch moves only the checkpoint.
	commit(t, s, Checkpoint{ChangelogOffset: 4, Position: Position{"src": {0: 12}}})
	if got := getCheckpoint(t, &s.StoreReader); got.ChangelogOffset != 4 || !got.Position.Equal(Position{"src": {0: 12}}) {
		t.Fatalf("checkpoint after empty batch: %+v", got)
	}
}

// TestSnapshotSeesDataAndCheckpointTogether races a writer against readers
// taking snapshots: in every snapshot, the data must be exactly what the
// checkpoint says has been applied. It would fail if data and checkpoint
// were written separately.
func TestSnapshotSeesDataAndCheckpointTogether(t *testing.T) {
	// Visibility does not depend on fsync; NoSync keeps the test fast.
	db := openTestOpts(t, Options{Dir: t.TempDir(), NoSync: true})
	defer db.Close()
	id := StoreID{"v", 3}
	s := db.Store(id)
	// The writer makes at least minCommits commits and keeps going until
	// the readers have made minChecks checks, so reads and writes overlap
	// however the goroutines are scheduled.
	const minCommits, minChecks = 300, 200
	var checks atomic.Int64
	done := make(chan struct{})
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := checkSnapshot(db, id); err != nil {
					errs <- err
					return
				}
				checks.Add(1)
			}
		}()
	}
	for i := 0; i < minCommits || checks.Load() < minChecks; i++ {
		if len(errs) > 0 {
			break
		}
		b := s.NewBatch()
		// Record i sets row i and bumps the counter to i+1.
		b.Set(key(t, "row", int64(i)), []byte(strconv.Itoa(i)))
		b.Set(key(t, "count"), []byte(strconv.Itoa(i+1)))
		if err := b.Commit(Checkpoint{ChangelogOffset: int64(i + 1), Position: Position{"src": {0: int64(10 * (i + 1))}}}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := checkSnapshot(db, id); err != nil {
		t.Fatal(err)
	}
}

// checkSnapshot checks that a store written as in the tests above (row i
// and counter per changelog record) matches its checkpoint.
func checkSnapshot(db *DB, id StoreID) error {
	snap, err := db.NewSnapshot()
	if err != nil {
		return err
	}
	defer snap.Close()
	return checkStoreMatchesCheckpoint(snap.Store(id))
}

func checkStoreMatchesCheckpoint(s *StoreReader) error {
	cp, err := s.Checkpoint()
	if err != nil {
		return err
	}
	n := cp.ChangelogOffset
	if got, _ := cp.Position.Get("src", 0); got != 10*n {
		return fmt.Errorf("checkpoint offset %d with position %d", n, got)
	}
	cnt, ok, err := s.Get(encKey("count"))
	if err != nil {
		return err
	}
	if n == 0 {
		if ok {
			return fmt.Errorf("empty checkpoint but counter %s", cnt)
		}
	} else if string(cnt) != strconv.FormatInt(n, 10) {
		return fmt.Errorf("checkpoint offset %d but counter %q", n, cnt)
	}
	lo := encKey("row")
	it, err := s.NewIter(lo, PrefixEnd(lo))
	if err != nil {
		return err
	}
	defer it.Close()
	var rows int64
	for valid := it.First(); valid; valid = it.Next() {
		vals, err := DecodeKey(it.Key())
		if err != nil {
			return err
		}
		if vals[1] != rows || string(it.Value()) != strconv.FormatInt(rows, 10) {
			return fmt.Errorf("row %d: key %v value %q", rows, vals, it.Value())
		}
		rows++
	}
	if rows != n {
		return fmt.Errorf("checkpoint offset %d but %d rows", n, rows)
	}
	return it.Error()
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir)
	s := db.Store(StoreID{"totals", 2})
	cp := Checkpoint{ChangelogOffset: 17, Input: map[string]map[int32]int64{"orders": {2: 40}},
		Position: Position{"orders": {2: 40}}, UpdatedAt: time.Unix(1700000123, 456000).UTC()}
	commit(t, s, cp, "a", "1", "b", "2")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v, want ErrClosed", err)
	}
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}

	db = openTest(t, dir)
	defer db.Close()
	s = db.Store(StoreID{"totals", 2})
	if got := scan(t, &s.StoreReader, nil, nil); strings.Join(got, " ") != "a=1 b=2" {
		t.Fatalf("after reopen: %v", got)
	}
	checkpointsEqual(t, getCheckpoint(t, &s.StoreReader), cp)
	ids, err := db.Stores()
	if err != nil || len(ids) != 1 || ids[0] != (StoreID{"totals", 2}) {
		t.Fatalf("Stores after reopen = %v, %v", ids, err)
	}
}

// TestCrashKeepsStoreAPrefixOfTheChangelog SIGKILLs a process that commits
// continuously and checks that the reopened store is exactly the prefix
// its checkpoint names, and holds at least every commit that returned.
func TestCrashKeepsStoreAPrefixOfTheChangelog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MATERIALIZE_TEST_HELPER=writer", "MATERIALIZE_TEST_DIR="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var acked int64
	for acked < 50 && sc.Scan() {
		if acked, err = strconv.ParseInt(sc.Text(), 10, 64); err != nil {
			t.Fatalf("helper said %q", sc.Text())
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if acked < 50 {
		t.Fatalf("helper stopped after %d commits", acked)
	}

	db := openTest(t, dir)
	defer db.Close()
	s := db.Store(StoreID{"v", 3})
	cp := getCheckpoint(t, &s.StoreReader)
	if cp.ChangelogOffset < acked {
		t.Fatalf("a synced commit was lost: checkpoint at %d, helper acknowledged %d", cp.ChangelogOffset, acked)
	}
	if err := checkStoreMatchesCheckpoint(&s.StoreReader); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed after %d acknowledged commits; recovered %d", acked, cp.ChangelogOffset)
}

func helperWriter(dir string) {
	db, err := Open(Options{Dir: dir, Logger: quietLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s := db.Store(StoreID{"v", 3})
	for i := int64(0); i < 1_000_000; i++ {
		b := s.NewBatch()
		k, _ := EncodeKey(nil, []any{"row", i})
		b.Set(k, []byte(strconv.FormatInt(i, 10)))
		k, _ = EncodeKey(nil, []any{"count"})
		b.Set(k, []byte(strconv.FormatInt(i+1, 10)))
		if err := b.Commit(Checkpoint{ChangelogOffset: i + 1, Position: Position{"src": {0: 10 * (i + 1)}}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(i + 1)
	}
}

func helperHold(dir string) {
	db, err := Open(Options{Dir: dir, Logger: quietLogger()})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // hold the DB until stdin closes
	_ = db.Close()
}

func TestStoresAreIsolated(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	ids := []StoreID{{"a", 1}, {"a", 10}, {"a", 256}, {"a", -1}, {"ab", 1}, {"a\x00", 1}, {"", 0}, {"b", 1}}
	for i, id := range ids {
		commit(t, db.Store(id), Checkpoint{ChangelogOffset: int64(i + 1)},
			"k", id.String(), "k2", id.String(), "\xff\xff", id.String())
	}
	for i, id := range ids {
		s := db.Store(id)
		want := []string{"k=" + id.String(), "k2=" + id.String(), "\xff\xff=" + id.String()}
		if got := scan(t, &s.StoreReader, nil, nil); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("store %q: %q, want %q", id, got, want)
		}
		if cp := getCheckpoint(t, &s.StoreReader); cp.ChangelogOffset != int64(i+1) {
			t.Errorf("store %q: checkpoint %d, want %d", id, cp.ChangelogOffset, i+1)
		}
	}
	// A store never written is empty, whatever its neighbours hold.
	for _, id := range []StoreID{{"a", 0}, {"a", 2}, {"a", 100}, {"aa", 1}, {"a\x00\x00", 1}} {
		s := db.Store(id)
		if got := scan(t, &s.StoreReader, nil, nil); len(got) != 0 {
			t.Errorf("unwritten store %q has %q", id, got)
		}
	}
	got, err := db.Stores()
	if err != nil {
		t.Fatal(err)
	}
	want := []StoreID{{"", 0}, {"a", -1}, {"a", 1}, {"a", 10}, {"a", 256}, {"a\x00", 1}, {"ab", 1}, {"b", 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Stores = %q, want %q", got, want)
	}

	// Clearing one store's data (DeleteRange with nil bounds) touches no
	// other.
	b := db.Store(StoreID{"a", 1}).NewBatch()
	b.DeleteRange(nil, nil)
	if err := b.Commit(Checkpoint{}); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, &db.Store(StoreID{"a", 1}).StoreReader, nil, nil); len(got) != 0 {
		t.Fatalf("cleared store has %q", got)
	}
	if got := scan(t, &db.Store(StoreID{"a", 10}).StoreReader, nil, nil); len(got) != 3 {
		t.Fatalf("neighbour of cleared store has %q", got)
	}

	// DropView removes every partition of "a" and their checkpoints, and
	// nothing of "ab", "a\x00" or "b".
	if err := db.DropView("a"); err != nil {
		t.Fatal(err)
	}
	got, err = db.Stores()
	if err != nil {
		t.Fatal(err)
	}
	want = []StoreID{{"", 0}, {"a\x00", 1}, {"ab", 1}, {"b", 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Stores after DropView(a) = %q, want %q", got, want)
	}
	for _, id := range []StoreID{{"a", 1}, {"a", 10}} {
		s := db.Store(id)
		if cp := getCheckpoint(t, &s.StoreReader); cp.ChangelogOffset != 0 {
			t.Errorf("dropped store %q still has checkpoint %d", id, cp.ChangelogOffset)
		}
		if _, ok := get(t, &s.StoreReader, []byte("k")); ok {
			t.Errorf("dropped store %q still has data", id)
		}
	}
	if v, ok := get(t, &db.Store(StoreID{"ab", 1}).StoreReader, []byte("k")); !ok || v != "ab/1" {
		t.Errorf("store ab/1 damaged by DropView(a): %q %v", v, ok)
	}

	if err := db.DropStore(StoreID{"ab", 1}); err != nil {
		t.Fatal(err)
	}
	got, _ = db.Stores()
	want = []StoreID{{"", 0}, {"a\x00", 1}, {"b", 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Stores after DropStore(ab/1) = %q, want %q", got, want)
	}
}

// TestStoresListsCheckpointOnlyAndDataOnly: a store with a checkpoint but
// no rows (everything deleted) still counts as on disk.
func TestStoresListsCheckpointOnly(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	commit(t, db.Store(StoreID{"empty", 0}), Checkpoint{ChangelogOffset: 5}, "k", "v", "k", "<del>")
	got, err := db.Stores()
	if err != nil || fmt.Sprint(got) != fmt.Sprint([]StoreID{{"empty", 0}}) {
		t.Fatalf("Stores = %v, %v", got, err)
	}
}

func TestIterBounds(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	s := db.Store(StoreID{"v", 0})
	var kvs []string
	for i := range 10 {
		kvs = append(kvs, fmt.Sprintf("k%d", i), strconv.Itoa(i))
	}
	commit(t, s, Checkpoint{ChangelogOffset: 1}, kvs...)
	// Neighbouring stores hold keys that would fall in range if bounds
	// leaked across stores.
	commit(t, db.Store(StoreID{"v", 1}), Checkpoint{}, "k", "x", "k5", "x")
	commit(t, db.Store(StoreID{"u", 0}), Checkpoint{}, "k5", "x", "\xff", "x")

	cases := []struct {
		lower, upper string
		nilLo, nilHi bool
		want         string
	}{
		{nilLo: true, nilHi: true, want: "k0 k1 k2 k3 k4 k5 k6 k7 k8 k9"},
		{lower: "k3", upper: "k6", want: "k3 k4 k5"},
		{lower: "k3", nilHi: true, want: "k3 k4 k5 k6 k7 k8 k9"},
		{nilLo: true, upper: "k2", want: "k0 k1"},
		{lower: "k55", upper: "k7", want: "k6"},
		{lower: "z", nilHi: true, want: ""},
		{lower: "k5", upper: "k5", want: ""},
		{lower: "", upper: "\xff", want: "k0 k1 k2 k3 k4 k5 k6 k7 k8 k9"},
	}
	for _, c := range cases {
		var lo, hi []byte
		if !c.nilLo {
			lo = []byte(c.lower)
		}
		if !c.nilHi {
			hi = []byte(c.upper)
		}
		var keys []string
		for _, kv := range scan(t, &s.StoreReader, lo, hi) {
			keys = append(keys, strings.SplitN(kv, "=", 2)[0])
		}
		if got := strings.Join(keys, " "); got != c.want {
			t.Errorf("[%q, %q): %q, want %q", lo, hi, got, c.want)
		}
	}

	it, err := s.NewIter([]byte("k2"), []byte("k8"))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	step := func(what string, valid bool, want string) {
		t.Helper()
		got := "<invalid>"
		if valid {
			got = string(it.Key()) + "=" + string(it.Value())
		}
		if got != want || valid != it.Valid() {
			t.Errorf("%s: %s, want %s", what, got, want)
		}
	}
	step("Last", it.Last(), "k7=7")
	step("Prev", it.Prev(), "k6=6")
	step("SeekGE k45", it.SeekGE([]byte("k45")), "k5=5")
	step("SeekGE below range", it.SeekGE([]byte("a")), "k2=2")
	step("SeekGE above range", it.SeekGE([]byte("k9")), "<invalid>")
	step("SeekLT k5", it.SeekLT([]byte("k5")), "k4=4")
	step("SeekLT above range", it.SeekLT([]byte("z")), "k7=7")
	step("Next", it.Next(), "<invalid>")
	step("First", it.First(), "k2=2")
	step("Prev before first", it.Prev(), "<invalid>")
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
}

// TestKeyPrefixScan scans by a key prefix made with the key encoding, the
// way a pull query reads "WHERE region = 'eu'" from a view keyed by
// (region, customer).
func TestKeyPrefixScan(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	s := db.Store(StoreID{"by_region", 0})
	b := s.NewBatch()
	for _, k := range [][]any{{"eu", "c1"}, {"eu", "c2"}, {"eu-west", "c3"}, {"e", "c4"}, {nil, "c5"}, {"eu", nil}} {
		v, err := EncodeRow(k)
		if err != nil {
			t.Fatal(err)
		}
		b.Set(key(t, k...), v)
	}
	if err := b.Commit(Checkpoint{ChangelogOffset: 6}); err != nil {
		t.Fatal(err)
	}
	p := key(t, "eu")
	it, err := s.NewIter(p, PrefixEnd(p))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got []string
	for valid := it.First(); valid; valid = it.Next() {
		row, err := DecodeRow(it.Value())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(row))
	}
	if want := "[eu <nil>] [eu c1] [eu c2]"; strings.Join(got, " ") != want {
		t.Fatalf("prefix scan: %s, want %s", strings.Join(got, " "), want)
	}
}

func TestSnapshotIsStable(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	id := StoreID{"v", 0}
	commit(t, db.Store(id), Checkpoint{ChangelogOffset: 1}, "a", "1")
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	commit(t, db.Store(id), Checkpoint{ChangelogOffset: 2}, "a", "2", "b", "2")
	r := snap.Store(id)
	if got := scan(t, r, nil, nil); strings.Join(got, " ") != "a=1" {
		t.Errorf("snapshot data changed: %v", got)
	}
	if cp := getCheckpoint(t, r); cp.ChangelogOffset != 1 {
		t.Errorf("snapshot checkpoint changed: %d", cp.ChangelogOffset)
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if v, _ := get(t, &db.Store(id).StoreReader, []byte("a")); v != "2" {
		t.Errorf("live read: %q", v)
	}
}

func TestOpenTwiceFails(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir)
	defer db.Close()
	for _, d := range []string{dir, dir + "/", filepath.Join(dir, "..", filepath.Base(dir))} {
		db2, err := Open(Options{Dir: d, Logger: quietLogger()})
		if !errors.Is(err, ErrLocked) {
			if db2 != nil {
				db2.Close()
			}
			t.Fatalf("second Open of %q: %v, want ErrLocked", d, err)
		}
		if !strings.Contains(err.Error(), db.Dir()) {
			t.Errorf("error does not name the directory: %v", err)
		}
	}
	// A symlink to the directory is the same directory.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: link, Logger: quietLogger()}); !errors.Is(err, ErrLocked) {
		t.Fatalf("Open through a symlink: %v, want ErrLocked", err)
	}
	// Once closed, the directory opens again.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	openTest(t, dir).Close()
}

func TestOpenHeldByAnotherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MATERIALIZE_TEST_HELPER=hold", "MATERIALIZE_TEST_DIR="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("helper: %q %v", sc.Text(), sc.Err())
	}
	_, err = Open(Options{Dir: dir, Logger: quietLogger()})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another basin process") {
		t.Fatalf("Open of a directory held by another process: %v, want ErrLocked", err)
	}
	t.Logf("error: %v", err)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	openTest(t, dir).Close()
}

func TestOpenBadDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{file, filepath.Join(file, "sub")} {
		_, err := Open(Options{Dir: dir, Logger: quietLogger()})
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("Open(%q): %v, want an error naming the path", dir, err)
		}
	}
	if _, err := Open(Options{}); err == nil {
		t.Error("Open without Dir succeeded")
	}
	if _, err := Open(Options{Dir: t.TempDir(), CacheSize: -1}); err == nil {
		t.Error("Open with a negative cache size succeeded")
	}
}

func TestOpenCorrupt(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir)
	commit(t, db.Store(StoreID{"v", 0}), Checkpoint{ChangelogOffset: 1}, "a", "1")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	manifests, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	if len(manifests) == 0 {
		t.Fatal("no MANIFEST file")
	}
	for _, m := range manifests {
		if err := os.WriteFile(m, bytes.Repeat([]byte("garbage!"), 8), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Open(Options{Dir: dir, Logger: quietLogger()})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "move the directory aside") {
		t.Fatalf("Open of a corrupt directory: %v, want ErrCorrupt with advice", err)
	}
	t.Logf("error: %v", err)
}

func TestOpenIncompatibleFormat(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir)
	if err := db.pdb.Set(formatKey, []byte("99"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: dir, Logger: quietLogger()}); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("Open: %v, want ErrIncompatible", err)
	}
	// The failed Open released the directory.
	if _, err := Open(Options{Dir: dir, Logger: quietLogger()}); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("second Open: %v, want ErrIncompatible again (not ErrLocked)", err)
	}
}

func TestCorruptCheckpoint(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	s := db.Store(StoreID{"v", 0})
	if err := db.pdb.Set(s.cpKey, []byte{checkpointVersion, 0x80}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkpoint(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "v/0") {
		t.Fatalf("Checkpoint: %v, want ErrCorrupt naming the store", err)
	}
}

func TestClosedDB(t *testing.T) {
	db := openTest(t, t.TempDir())
	s := db.Store(StoreID{"v", 0})
	b := s.NewBatch()
	b.Set([]byte("a"), []byte("1"))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checks := map[string]error{
		"Commit":    b.Commit(Checkpoint{}),
		"DropView":  db.DropView("v"),
		"DropStore": db.DropStore(StoreID{"v", 0}),
	}
	_, _, checks["Get"] = s.Get([]byte("a"))
	_, checks["Checkpoint"] = s.Checkpoint()
	_, checks["NewIter"] = s.NewIter(nil, nil)
	_, checks["Stores"] = db.Stores()
	_, checks["NewSnapshot"] = db.NewSnapshot()
	for op, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", op, err)
		}
	}
}

func TestFormatKey(t *testing.T) {
	id := StoreID{"orders_by_region", 3}
	for k, want := range map[string]string{
		string(appendStorePrefix(nil, nsData, id)) + string(mustKey(t, "eu", int64(42), nil)): "data orders_by_region/3 ('eu', 42, NULL)",
		string(appendStorePrefix(nil, nsData, id)) + "\x01raw":                                "data orders_by_region/3 01726177",
		string(appendStorePrefix(nil, nsCheckpoint, id)):                                      "checkpoint orders_by_region/3",
		string(formatKey): "meta format",
		"zz":              "unknown 7a7a",
	} {
		if got := FormatKey([]byte(k)); got != want {
			t.Errorf("FormatKey(%x) = %q, want %q", k, got, want)
		}
	}
}

// benchStore writes n rows keyed customer-000000, ... into a store
// through batches of 10,000, with a row cache of rowCache bytes.
func benchStore(b *testing.B, n int, rowCache int64) *Store {
	db, err := Open(Options{Dir: b.TempDir(), Logger: quietLogger(), NoSync: true, RowCacheSize: rowCache})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	s := db.Store(StoreID{"bench", 0})
	batch := s.NewBatch()
	for i := range n {
		row, _ := EncodeRow([]any{fmt.Sprintf("customer-%06d", i), int64(i), float64(i) * 1.5, time.Unix(1700000000+int64(i), 0)})
		batch.Set(mustKey(b, fmt.Sprintf("customer-%06d", i)), row)
		if batch.Len() == 10000 {
			if err := batch.Commit(Checkpoint{ChangelogOffset: int64(i + 1)}); err != nil {
				b.Fatal(err)
			}
			batch = s.NewBatch()
		}
	}
	if err := batch.Commit(Checkpoint{ChangelogOffset: int64(n)}); err != nil {
		b.Fatal(err)
	}
	return s
}

const benchKeys = 100_000

func BenchmarkGet(b *testing.B) {
	s := benchStore(b, benchKeys, 0)
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = mustKey(b, fmt.Sprintf("customer-%06d", (i*7919)%benchKeys))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok, err := s.Get(keys[i%len(keys)]); !ok || err != nil {
			b.Fatal(ok, err)
		}
		i++
	}
}

func BenchmarkScan(b *testing.B) {
	s := benchStore(b, benchKeys, 0)
	b.ReportAllocs()
	for b.Loop() {
		it, err := s.NewIter(nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for valid := it.First(); valid; valid = it.Next() {
			_ = it.Value()
			n++
		}
		if err := it.Close(); err != nil || n != benchKeys {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchKeys), "ns/key")
}

func BenchmarkCommit(b *testing.B) {
	for _, sync := range []bool{false, true} {
		b.Run(fmt.Sprintf("sync=%v", sync), func(b *testing.B) {
			db, err := Open(Options{Dir: b.TempDir(), Logger: quietLogger(), NoSync: !sync})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			s := db.Store(StoreID{"bench", 0})
			row, _ := EncodeRow(benchRow)
			cp := Checkpoint{Position: Position{"orders": {0: 0}}}
			var off int64
			for b.Loop() {
				batch := s.NewBatch()
				for range 100 {
					batch.Set(mustKey(b, off), row)
					off++
				}
				cp.ChangelogOffset = off
				cp.Position.Advance("orders", 0, off)
				if err := batch.Commit(cp); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(off), "ns/record")
		})
	}
}

func TestDump(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	s := db.Store(StoreID{"by_region", 1})
	b := s.NewBatch()
	for _, r := range [][]any{{"eu", int64(3), 27.5}, {"us", int64(1), nil}, {"apac", int64(2), 1.25}} {
		v, _ := EncodeRow(r)
		b.Set(key(t, r[0]), v)
	}
	b.Set([]byte("raw"), []byte{0xff})
	if err := b.Commit(Checkpoint{ChangelogOffset: 3, Position: Position{"orders": {1: 9}}, UpdatedAt: time.Unix(1700000000, 0)}); err != nil {
		t.Fatal(err)
	}
	commit(t, db.Store(StoreID{"other", 0}), Checkpoint{ChangelogOffset: 1}, "x", "y")
	var sb strings.Builder
	if err := db.Dump(&sb, "by_region", 3); err != nil {
		t.Fatal(err)
	}
	want := `store by_region/1: changelog=3 input=[] position=[orders/1:9] updated=2023-11-14T22:13:20Z
  ('apac') = ('apac', 2, 1.25)
  ('eu') = ('eu', 3, 27.5)
  ('us') = ('us', 1, NULL)
  ...
`
	if sb.String() != want {
		t.Fatalf("Dump:\n%s\nwant:\n%s", sb.String(), want)
	}
	sb.Reset()
	if err := db.Dump(&sb, "", 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "  726177 = ff\n") || !strings.Contains(sb.String(), "store other/0: changelog=1") {
		t.Fatalf("Dump of everything:\n%s", sb.String())
	}
}

func TestCloseReportsLeakedIterator(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir)
	s := db.Store(StoreID{"v", 0})
	commit(t, s, Checkpoint{ChangelogOffset: 1}, "a", "1")
	if _, err := s.NewIter(nil, nil); err != nil { // never closed
		t.Fatal(err)
	}
	if err := db.Close(); err == nil || !strings.Contains(err.Error(), "leaked iterators") {
		t.Fatalf("Close with an open iterator: %v, want a leaked-iterator error", err)
	}
	// The DB is closed and the directory released anyway.
	db = openTest(t, dir)
	defer db.Close()
	if v, ok := get(t, &db.Store(StoreID{"v", 0}).StoreReader, []byte("a")); !ok || v != "1" {
		t.Fatalf("after reopen: %q %v", v, ok)
	}
}
