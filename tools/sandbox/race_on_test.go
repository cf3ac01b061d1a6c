//go:build race

package sandbox

// raceEnabled: the race detector reserves terabytes of address space,
// so a low RLIMIT_AS kills the test binary (the helper) itself.
const raceEnabled = true
