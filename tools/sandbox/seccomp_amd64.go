//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const (
	nativeArch    = unix.AUDIT_ARCH_X86_64
	archName      = "x86-64"
	x32Bit        = 0x40000000 // __X32_SYSCALL_BIT: x32 calls are refused
	cloneFlagsArg = 0
)

// deniedArch are x86-64's own risky calls: port I/O, the LDT, old module calls.
var deniedArch = []uint32{unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_MODIFY_LDT, unix.SYS_USELIB,
	unix.SYS_CREATE_MODULE, unix.SYS_GET_KERNEL_SYMS, unix.SYS_QUERY_MODULE, unix.SYS_NFSSERVCTL, unix.SYS_LOOKUP_DCOOKIE}

func archNote() string {
	return "seccomp refuses every i386 (int 0x80) and x32 system call"
}
