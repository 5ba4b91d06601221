package node

import (
	"strings"
	"testing"
	"time"
)

// TestOptionsRefuseNegative checks that a negative count or duration is
// refused at start, naming its flag, instead of becoming the default.
func TestOptionsRefuseNegative(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.SessionTimeout = -time.Second }, "--session-timeout = -1s"},
		{func(o *Options) { o.HeartbeatInterval = -time.Millisecond }, "--heartbeat-interval = -1ms"},
		{func(o *Options) { o.ProbingInterval = -time.Minute }, "--probing-interval"},
		{func(o *Options) { o.LagReportInterval = -time.Second }, "--lag-report-interval"},
		{func(o *Options) { o.StandbyReplicas = -1 }, "--standby-replicas = -1"},
		{func(o *Options) { o.MaxWarmups = -2 }, "--max-warmups = -2"},
		{func(o *Options) { o.AcceptableRecoveryLag = -5 }, "--acceptable-recovery-lag = -5"},
	} {
		o := Options{DataDir: t.TempDir(), PGAddr: "127.0.0.1:0"}
		tc.mod(&o)
		o.ensureDefaults()
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error naming %q", err, tc.want)
		}
	}
	o := Options{DataDir: t.TempDir(), PGAddr: "127.0.0.1:0"}
	o.ensureDefaults()
	if err := o.Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
	if o.SessionTimeout != DefaultSessionTimeout || o.HeartbeatInterval != DefaultHeartbeatInterval {
		t.Errorf("zero durations did not become the defaults: %v, %v", o.SessionTimeout, o.HeartbeatInterval)
	}
}
