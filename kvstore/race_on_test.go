//go:build race

package kvstore

// raceEnabled: the race detector instruments allocations too, so tests
// that count bytes allocated skip their bound.
const raceEnabled = true
