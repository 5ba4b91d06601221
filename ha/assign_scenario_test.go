package ha

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/basindb/basin/materialize"
)

// TestAssignScenarios runs the scripted scenarios in testdata/assign.
// Commands:
//
//	config lag=N warmups=N      set Config
//	tasks                       replace the tasks; input lines
//	                            "<view> partitions=N standbys=N end=N"
//	add <id>...                 add nodes without state
//	remove <id>...              remove nodes (crash or leave)
//	offsets <id>                set a node's checkpointed offsets; input
//	                            lines "<view>/<partition>=<offset>"
//	catch-up [<id>...]          bring the replicas the current assignment
//	                            gives these nodes (default: all) to the end
//	advance n=N                 append N records to every changelog
//	forget                      drop the previous assignment (fresh leader)
//	assign                      run Assign; the result becomes previous
//	converge                    assign and catch up until no follow-up
//
// Output lists each node's tasks; "*" marks a replica that is not caught
// up.
//
// Regenerate expected output with -rewrite.
func TestAssignScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/assign", func(t *testing.T, path string) {
		c := &cluster{offsets: map[string]map[materialize.StoreID]int64{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "config":
				d.MaybeScanArgs(t, "lag", &c.cfg.AcceptableRecoveryLag)
				d.MaybeScanArgs(t, "warmups", &c.cfg.MaxWarmups)
				return ""
			case "tasks":
				c.tasks = nil
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					f := strings.Fields(line)
					var parts, standbys int
					var end int64
					for _, kv := range f[1:] {
						k, v, _ := strings.Cut(kv, "=")
						n, err := strconv.ParseInt(v, 10, 64)
						if err != nil {
							d.Fatalf(t, "%s: %v", kv, err)
						}
						switch k {
						case "partitions":
							parts = int(n)
						case "standbys":
							standbys = int(n)
						case "end":
							end = n
						default:
							d.Fatalf(t, "unknown task field %q", k)
						}
					}
					for p := range parts {
						c.tasks = append(c.tasks, Task{ID: materialize.StoreID{View: f[0], Partition: int32(p)}, Standbys: standbys, EndOffset: end})
					}
				}
				return ""
			case "add":
				for _, a := range d.CmdArgs {
					c.addNode(a.Key)
				}
				return ""
			case "remove":
				for _, a := range d.CmdArgs {
					c.removeNode(a.Key)
				}
				return ""
			case "offsets":
				id := d.CmdArgs[0].Key
				c.offsets[id] = map[materialize.StoreID]int64{}
				for _, line := range strings.Fields(d.Input) {
					k, v, _ := strings.Cut(line, "=")
					view, p, _ := strings.Cut(k, "/")
					pn, err1 := strconv.Atoi(p)
					off, err2 := strconv.ParseInt(v, 10, 64)
					if err1 != nil || err2 != nil {
						d.Fatalf(t, "bad offset %q", line)
					}
					c.offsets[id][materialize.StoreID{View: view, Partition: int32(pn)}] = off
				}
				return ""
			case "catch-up":
				if len(d.CmdArgs) == 0 {
					c.catchUp()
					return ""
				}
				saved := c.prev
				only := &Assignment{Nodes: map[string]NodeTasks{}}
				for _, a := range d.CmdArgs {
					only.Nodes[a.Key] = saved.Nodes[a.Key]
				}
				c.prev = only
				c.catchUp()
				c.prev = saved
				return ""
			case "advance":
				var n int64
				d.ScanArgs(t, "n", &n)
				c.advance(n)
				return ""
			case "forget":
				c.prev = nil
				return ""
			case "assign":
				in := c.input()
				out := Assign(in)
				checkInvariants(t, in, out)
				c.prev = &out
				return render(in, out)
			case "converge":
				rounds := c.converge(t, 1000)
				return fmt.Sprintf("rounds: %d\n%s", rounds, render(c.input(), *c.prev))
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
				return ""
			}
		})
	})
}

func render(in AssignInput, a Assignment) string {
	li := lags(in)
	var b strings.Builder
	list := func(id string, ts []materialize.StoreID) string {
		var s []string
		for _, t := range ts {
			m := t.String()
			if !li.caught[t][id] {
				m += "*"
			}
			s = append(s, m)
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	for _, id := range a.NodeIDs() {
		nt := a.Nodes[id]
		fmt.Fprintf(&b, "%s: active=%s standby=%s", id, list(id, nt.Active), list(id, nt.Standby))
		if len(nt.Warmup) > 0 {
			fmt.Fprintf(&b, " warmup=%s", list(id, nt.Warmup))
		}
		b.WriteString("\n")
	}
	if len(a.Shortfall) > 0 {
		var ts []materialize.StoreID
		for t := range a.Shortfall {
			ts = append(ts, t)
		}
		materialize.SortStoreIDs(ts)
		var s []string
		for _, t := range ts {
			s = append(s, fmt.Sprintf("%s=%d", t, a.Shortfall[t]))
		}
		fmt.Fprintf(&b, "shortfall: %s\n", strings.Join(s, " "))
	}
	if a.NeedsFollowUp {
		b.WriteString("follow-up\n")
	}
	return b.String()
}
