//go:build unix && !linux

package beneath

import "golang.org/x/sys/unix"

// haveOpenat2: only Linux has openat2; the root walks.
const haveOpenat2 = false

func openBeneath(int, string) (int, error) { return -1, unix.ENOSYS }

// pathFlag: without O_PATH, directories are opened for reading.
const pathFlag = unix.O_RDONLY
