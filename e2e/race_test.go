//go:build race

package e2e

// raceEnabled says the race detector is built in.
const raceEnabled = true
