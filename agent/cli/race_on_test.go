//go:build race

package cli

// raceEnabled: the race detector multiplies memory, so RSS checks skip.
const raceEnabled = true
