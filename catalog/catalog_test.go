package catalog

import (
	"fmt"
	"math/rand"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/basindb/basin/internal/pgerr"
)

func stream(name string) *Relation {
	return &Relation{Name: name, Kind: KindStream, Topic: name, Partitions: 2, KeyFormat: "kafka", ValueFormat: "json",
		Schema: Schema{Columns: []Column{{Name: "k", Type: BigInt, Key: true}, {Name: "v", Type: Varchar}}}}
}

func view(name string, sources ...string) *Relation {
	return &Relation{Name: name, Kind: KindView, Partitions: 2, KeyFormat: "kafka", ValueFormat: "json",
		Schema:  Schema{Columns: []Column{{Name: "v", Type: Varchar, Key: true}, {Name: "n", Type: BigInt}}},
		Sources: sources, SQL: "CREATE TABLE " + name + " AS ..."}
}

func create(r *Relation) *Command { return &Command{Op: OpCreate, Relation: r} }
func drop(name string) *Command   { return &Command{Op: OpDrop, Name: name} }

func codeOf(err error) pgerr.Code {
	if err == nil {
		return ""
	}
	return pgerr.CodeOf(err)
}

func TestApply(t *testing.T) {
	c := New()
	if c.Applied() != -1 {
		t.Fatalf("Applied of an empty catalog = %d", c.Applied())
	}
	steps := []struct {
		cmd     *Command
		code    pgerr.Code
		created string
		dropped string
	}{
		{cmd: create(stream("s")), created: "s"},
		{cmd: create(stream("S")), code: pgerr.DuplicateTable},
		{cmd: create(view("v", "s")), created: "v"},
		{cmd: create(view("w", "nope")), code: pgerr.UndefinedTable},
		{cmd: create(view("w", "s")), created: "w"},
		{cmd: drop("s"), code: pgerr.DependentObjectsStillExist},
		{cmd: drop("nope"), code: pgerr.UndefinedTable},
		{cmd: drop("V"), dropped: "v"},
		{cmd: drop("s"), code: pgerr.DependentObjectsStillExist},
		{cmd: drop("w"), dropped: "w"},
		{cmd: drop("s"), dropped: "s"},
		{cmd: &Command{Op: "rename", Name: "x"}, code: pgerr.InternalError},
		{cmd: create(stream("s")), created: "s"},
	}
	for i, st := range steps {
		off := int64(10 + i)
		ch := c.Apply(off, st.cmd)
		if got := codeOf(ch.Err); got != st.code {
			t.Fatalf("step %d (%s %s): error %v (code %q), want code %q", i, st.cmd.Op, st.cmd.Name, ch.Err, got, st.code)
		}
		if ch.Offset != off {
			t.Errorf("step %d: change offset %d, want %d", i, ch.Offset, off)
		}
		if (ch.Created != nil) != (st.created != "") || ch.Created != nil && ch.Created.Name != st.created {
			t.Errorf("step %d: created %+v, want %q", i, ch.Created, st.created)
		}
		if ch.Created != nil && ch.Created.Version != off {
			t.Errorf("step %d: version %d, want the command's offset %d", i, ch.Created.Version, off)
		}
		if (ch.Dropped != nil) != (st.dropped != "") || ch.Dropped != nil && ch.Dropped.Name != st.dropped {
			t.Errorf("step %d: dropped %+v, want %q", i, ch.Dropped, st.dropped)
		}
		if c.Applied() != off {
			t.Errorf("step %d: Applied = %d, want %d", i, c.Applied(), off)
		}
	}
	// The re-created s is a new relation: its version, and so its state
	// and topics, differ from the first one's.
	r, ok := c.Lookup("S")
	if !ok || r.Version != 22 || r.StoreName() != "s@22" {
		t.Fatalf("re-created s = %+v, %v", r, ok)
	}
	if got := len(c.List(KindStream, KindTable, KindView)); got != 1 {
		t.Fatalf("catalog holds %d relations, want 1", got)
	}
}

func TestDependentsError(t *testing.T) {
	c := New()
	c.Apply(0, create(stream("s")))
	c.Apply(1, create(view("b", "s")))
	c.Apply(2, create(view("a", "s")))
	ch := c.Apply(3, drop("s"))
	pe, ok := pgerr.As(ch.Err)
	if !ok {
		t.Fatalf("drop with dependents: %v", ch.Err)
	}
	want := &pgerr.Error{Code: pgerr.DependentObjectsStillExist,
		Message: "cannot drop stream s because other objects depend on it",
		Detail:  "view a, view b read s.", Hint: "Run DROP TABLE a, DROP TABLE b first."}
	if !reflect.DeepEqual(pe, want) {
		t.Fatalf("got %+v\nwant %+v", pe, want)
	}
	if got := c.Dependents("S"); len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("Dependents = %v", got)
	}
}

// TestApplyDeterministic applies the same random command log, with its
// conflicts (duplicate creates, drops of missing relations or of
// relations views still read), to two catalogs and expects the same
// catalog and the same verdict on every command. The log goes through
// EncodeCommand/DecodeCommand as the command topic would carry it.
func TestApplyDeterministic(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var log [][]byte
		names := []string{"a", "b", "c", "d", "e", "f"}
		for i := 0; i < 200; i++ {
			n := names[rng.Intn(len(names))]
			var cmd *Command
			switch rng.Intn(3) {
			case 0:
				cmd = create(stream(n))
			case 1:
				var srcs []string
				for j := rng.Intn(3); j > 0; j-- {
					srcs = append(srcs, names[rng.Intn(len(names))])
				}
				cmd = create(view(n, srcs...))
			default:
				cmd = drop(n)
			}
			b, err := EncodeCommand(cmd)
			if err != nil {
				t.Fatal(err)
			}
			log = append(log, b)
		}
		replay := func() (*Catalog, []string) {
			c := New()
			var verdicts []string
			for off, b := range log {
				cmd, err := DecodeCommand(b)
				if err != nil {
					t.Fatal(err)
				}
				ch := c.Apply(int64(off), cmd)
				verdicts = append(verdicts, fmt.Sprintf("%v %v %v", codeOf(ch.Err), ch.Created != nil, ch.Dropped != nil))
			}
			return c, verdicts
		}
		c1, v1 := replay()
		c2, v2 := replay()
		if !reflect.DeepEqual(v1, v2) {
			t.Fatalf("seed %d: verdicts differ", seed)
		}
		l1, l2 := c1.List(KindStream, KindTable, KindView), c2.List(KindStream, KindTable, KindView)
		if !reflect.DeepEqual(l1, l2) {
			t.Fatalf("seed %d: catalogs differ:\n%+v\n%+v", seed, l1, l2)
		}
		// Invariants: every view's sources exist.
		for _, r := range l1 {
			for _, s := range r.Sources {
				if _, ok := c1.Lookup(s); !ok {
					t.Fatalf("seed %d: view %s reads missing %s", seed, r.Name, s)
				}
			}
		}
	}
}

func TestDecodeCommand(t *testing.T) {
	for _, bad := range []string{"", "{", `{"op":"create"}`, "[1]"} {
		if _, err := DecodeCommand([]byte(bad)); err == nil {
			t.Errorf("DecodeCommand(%q) succeeded", bad)
		}
	}
	cmd := create(view("v", "s"))
	cmd.Relation.Options = map[string]string{"acceptable.offset.lag": "10"}
	b, err := EncodeCommand(cmd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCommand(b)
	if err != nil || !reflect.DeepEqual(got, cmd) {
		t.Fatalf("round trip: %+v, %v\nwant %+v", got, err, cmd)
	}
}

func TestParseType(t *testing.T) {
	for in, want := range map[string]Type{
		"int": Int, "INTEGER": Int, "int8": BigInt, "varchar(20)": Varchar, "double precision": Double,
		"TEXT": Varchar, "timestamp without time zone": Timestamp, "bool": Boolean,
		"numeric(10,2)": Decimal, "DATE": Date, "timestamp with time zone": TimestampTZ, "jsonb": JSONB,
		"interval": Interval, "uuid": UUID, "bytea": Bytea, "time": Time, "json": JSON,
	} {
		if got, ok := ParseType(in); !ok || got != want {
			t.Errorf("ParseType(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	if _, ok := ParseType("money"); ok {
		t.Error("ParseType(money) succeeded")
	}
}

// TestApplyHalts: a halt is recorded once per partition while it waits,
// RESUME marks every waiting halt with its own offset (and fails when
// none waits), the same loss found again after a RESUME is not a new
// halt, and a new loss is. The relation keeps its version.
func TestApplyHalts(t *testing.T) {
	c := New()
	c.Apply(1, create(stream("s")))
	c.Apply(2, create(view("v", "s")))
	halt := func(p int32, offset, end int64) *Command {
		return &Command{Op: OpHalt, Name: "V", Halt: &Halt{Topic: "s", Partition: p, Offset: offset, End: end, Error: "lost"}}
	}
	resume := &Command{Op: OpResume, Name: "v"}
	steps := []struct {
		cmd     *Command
		code    pgerr.Code
		altered bool
		halts   string // topic/partition offset>end resumed, per halt
	}{
		{cmd: resume, code: pgerr.ObjectNotInPrerequisiteState, halts: ""},
		{cmd: halt(0, 5, 2), altered: true, halts: "s/0 5>2 r0"},
		{cmd: halt(0, 5, 3), halts: "s/0 5>2 r0"},
		{cmd: halt(1, 9, 0), altered: true, halts: "s/0 5>2 r0,s/1 9>0 r0"},
		{cmd: resume, altered: true, halts: "s/0 5>2 r7,s/1 9>0 r7"},
		{cmd: resume, code: pgerr.ObjectNotInPrerequisiteState, halts: "s/0 5>2 r7,s/1 9>0 r7"},
		{cmd: halt(0, 5, 2), halts: "s/0 5>2 r7,s/1 9>0 r7"},
		{cmd: halt(0, 8, 4), altered: true, halts: "s/0 5>2 r7,s/1 9>0 r7,s/0 8>4 r0"},
		{cmd: &Command{Op: OpHalt, Name: "nope", Halt: &Halt{Topic: "s"}}, code: pgerr.UndefinedTable, halts: "s/0 5>2 r7,s/1 9>0 r7,s/0 8>4 r0"},
	}
	for i, st := range steps {
		ch := c.Apply(int64(3+i), st.cmd)
		if got := codeOf(ch.Err); got != st.code {
			t.Fatalf("step %d (%s): error %v, want %q", i, st.cmd.Op, ch.Err, st.code)
		}
		if (ch.Altered != nil) != st.altered {
			t.Fatalf("step %d (%s): altered %v, want %v", i, st.cmd.Op, ch.Altered != nil, st.altered)
		}
		r, _ := c.Lookup("v")
		if r.Version != 2 {
			t.Fatalf("step %d: version %d, want 2", i, r.Version)
		}
		var got []string
		for _, h := range r.Halts {
			got = append(got, fmt.Sprintf("%s/%d %d>%d r%d", h.Topic, h.Partition, h.Offset, h.End, h.Resumed))
		}
		if s := strings.Join(got, ","); s != st.halts {
			t.Fatalf("step %d (%s): halts %s, want %s", i, st.cmd.Op, s, st.halts)
		}
		waiting := regexp.MustCompile(`(^|,)s/0 \d+>\d+ r0`).MatchString(st.halts)
		if h, ok := r.Halted("s", 0); ok != waiting {
			t.Fatalf("step %d: Halted(s, 0) = %v, %v", i, h, ok)
		}
	}
	if _, err := DecodeCommand([]byte(`{"op":"halt","name":"v"}`)); err == nil {
		t.Fatal("a halt command without a halt decoded")
	}
}
