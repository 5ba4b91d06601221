package pgerr

import "strings"

// JoinAnd joins items for a message: "a", "a and b", "a, b and c".
func JoinAnd(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
