//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const (
	nativeArch    = unix.AUDIT_ARCH_AARCH64
	archName      = "arm64"
	x32Bit        = 0
	cloneFlagsArg = 0
)

var deniedArch = []uint32{unix.SYS_NFSSERVCTL, unix.SYS_LOOKUP_DCOOKIE}

func archNote() string { return "seccomp refuses every 32-bit ARM system call" }
