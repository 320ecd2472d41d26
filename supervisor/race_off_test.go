//go:build !race

package supervisor

// raceSlowdown is 1 without the race detector (see race_on_test.go).
const raceSlowdown = 1
