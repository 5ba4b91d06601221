package catalog

import "testing"

func TestInternalTopic(t *testing.T) {
	for name, want := range map[string]bool{
		"_basin-basin-commands":       true,
		"_basin-prod-v-7-changelog":   true,
		"_basin-other-processing-log": true,
		"_BASIN-basin-commands":       true,
		"__consumer_offsets":          true,
		"__transaction_state":         true,
		"__anything":                  true,
		"orders":                      false,
		"_orders":                     false,
		"_basin":                      false,
		"basin-commands":              false,
		"_basinx-commands":            false,
		CommandTopic("c"):             true,
		ProcessingLogTopic("c"):       true,
		MembersTopic("c"):             true,
		(&Relation{Name: "V", Version: 3}).ChangelogTopic("c"): true,
	} {
		if got := InternalTopic(name); got != want {
			t.Errorf("InternalTopic(%q) = %v, want %v", name, got, want)
		}
	}
}
