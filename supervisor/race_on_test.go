//go:build race

package supervisor

// raceSlowdown is how much slower the race detector makes a process start:
// test setup deadlines (not the promises under test) are scaled by it.
const raceSlowdown = 5
