package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/basindb/basin/internal/testcluster"
)

// TestClusterForwardingWithSCRAM runs two real nodes with --auth scram
// and no standbys, so that each holds only some partitions and reads
// the others from its peer: the forwarded reads authenticate as
// basin_cluster with the cluster secret, and every row arrives.
func TestClusterForwardingWithSCRAM(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Password: "client pw",
		Args: []string{"--auth", "scram", "--standby-replicas", "0"},
		Env:  []string{`BASIN_USERS={"basin": "client pw"}`, "BASIN_CLUSTER_SECRET=cluster pw"}})
	v := newClusterView(t, c)
	c.Node(0).Exec(t, "CREATE TABLE per_id AS SELECT id, COUNT(*) AS n FROM orders GROUP BY id")
	waitPlacedView(t, c, c.Node(0), "per_id", 4, 0)
	v.produce(t, 200)
	for _, n := range c.Nodes() {
		c.Eventually(t, 30*time.Second, func() error {
			rows, err := n.QueryErr(t, "SELECT id, _served_by FROM per_id")
			if err != nil {
				return err
			}
			servers := map[string]bool{}
			for _, r := range rows {
				servers[r[1]] = true
			}
			if len(rows) != 200 || len(servers) != 2 {
				return fmt.Errorf("on %s: %d rows from %v, want 200 from both nodes", n.ID, len(rows), servers)
			}
			return nil
		})
	}
}

// TestClusterSecretRequired: a node of a cluster (--brokers) with
// authentication on needs the cluster secret, and basin_cluster is not
// a user name to configure besides it.
func TestClusterSecretRequired(t *testing.T) {
	base := Options{DataDir: t.TempDir(), Brokers: []string{"127.0.0.1:9092"}, Auth: "scram", Users: map[string]string{"alice": "pw"}}
	o := base
	if err := o.validateAuth(); err == nil || !strings.Contains(err.Error(), "cluster-secret") {
		t.Errorf("no cluster secret: %v", err)
	}
	o = base
	o.ClusterSecret = "s"
	if err := o.validateAuth(); err != nil {
		t.Errorf("with a cluster secret: %v", err)
	}
	o.Users = map[string]string{"alice": "pw", ClusterUser: "x"}
	if err := o.validateAuth(); err == nil || !strings.Contains(err.Error(), ClusterUser) {
		t.Errorf("%s among users: %v", ClusterUser, err)
	}
}
