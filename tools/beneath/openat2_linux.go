package beneath

import "golang.org/x/sys/unix"

// haveOpenat2: try openat2 first (Linux 5.6+); a kernel without it
// answers ENOSYS once and the root walks from then on.
const haveOpenat2 = true

// openBeneath opens dir beneath dirfd in one call: no "..", no absolute
// jump, no symbolic link (magic /proc links included) on the way.
func openBeneath(dirfd int, dir string) (int, error) {
	return unix.Openat2(dirfd, dir, &unix.OpenHow{
		Flags:   pathFlag | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// pathFlag opens directories only as places to resolve names from.
const pathFlag = unix.O_PATH
