//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package workspace

// lockPath is a no-op where flock is unavailable: writes are still atomic
// and serialised within the process, but two processes may race.
func lockPath(string) (func(), error) { return func() {}, nil }
