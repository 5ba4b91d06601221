//go:build race

package stream

// raceEnabled is whether this test binary was built with -race, whose
// tasks run several times slower: long tests scale their deadlines.
const raceEnabled = true
