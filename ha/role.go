package ha

// Role is a replica's role: the one type for it in basin. The assignment
// gives a node a task as RoleActive, RoleStandby or RoleWarmup (NodeTasks);
// exec runs each task it holds in its role and RoleNone for the rest; and
// reads report the role that served them (the _role pseudo-column, SHOW
// TASKS, the /lag and /tasks bodies), where an active still restoring its
// store is RoleRestoring.
//
// A Role is its wire form: the string is what JSON bodies, rows and
// messages carry, so a role from a node of another version that this one
// does not know stays as it came (router.go sorts it last and never counts
// it as the active). It lives here rather than in stream because ha is the
// lower of the two: ha imports only materialize and internal helpers,
// none of which import exec, so exec imports ha for it without a cycle
// (and ha must keep not importing exec).
type Role string

const (
	// RoleNone is no role: another node holds the task. It is what exec
	// reports for a task it does not hold; the assignment never gives it.
	RoleNone Role = "none"
	// RoleActive is the task's active: it processes the task's input
	// and writes its changelog. As reads report it, an active that has
	// restored its store and runs.
	RoleActive Role = "active"
	// RoleRestoring is an active still restoring its store from the
	// changelog, as reads report it; the assignment says RoleActive.
	RoleRestoring Role = "restoring"
	// RoleStandby is a standby replica: it follows the task's changelog
	// into a local store, ready to take over.
	RoleStandby Role = "standby"
	// RoleWarmup is a warm-up replica (see NodeTasks.Warmup): a standby
	// that is catching up before the task moves to its node.
	RoleWarmup Role = "warmup"
)

// String returns the role's wire form, e.g. "active".
func (r Role) String() string { return string(r) }

// rank orders roles for ties and messages: active, restoring, standby,
// warm-up, anything else.
func (r Role) rank() int {
	switch r {
	case RoleActive:
		return 0
	case RoleRestoring:
		return 1
	case RoleStandby:
		return 2
	case RoleWarmup:
		return 3
	}
	return 4
}

// isActive reports whether r is the partition's active, running or not.
func (r Role) isActive() bool { return r == RoleActive || r == RoleRestoring }
