//go:build race

package testcluster

// raceEnabled is whether this test binary was built with -race: the
// basin binary Binary builds is then built with it too.
const raceEnabled = true
