package sandbox

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter is written here rather than with a filter library:
// it must refuse every call from a foreign architecture (i386 through
// int 0x80, x32), which a library that sends them to the default action
// lets through when the default is "allow", and it must compare the
// 32-bit arguments (ioctl's request, socket's family) on their low half
// only, as the kernel reads them.

// seccomp_data offsets.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// filterSpec is what varies between commands.
type filterSpec struct {
	sockets  []uint32 // socket families allowed; every other is refused
	truncate bool     // refuse truncate(2): Landlock below ABI 3 does not guard it
}

// deniedCommon are calls no command needs that would let it escape, spy
// on other processes or reach the kernel's riskiest interfaces.
var deniedCommon = []uint32{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN,
	unix.SYS_USERFAULTFD, unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF,
	unix.SYS_REBOOT, unix.SYS_SETNS, unix.SYS_UNSHARE, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER, unix.SYS_OPEN_BY_HANDLE_AT,
	unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_ACCT, unix.SYS_QUOTACTL, unix.SYS_SYSLOG, unix.SYS_MOUNT_SETATTR,
	unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_FSOPEN, unix.SYS_FSMOUNT, unix.SYS_FSCONFIG, unix.SYS_FSPICK,
	unix.SYS_PIDFD_GETFD, unix.SYS_PROCESS_MADVISE, unix.SYS_CHROOT, unix.SYS_VHANGUP,
}

// ioctls refused on every descriptor: typing into a terminal's input
// queue (TIOCSTI) and the Linux console's selection paste (TIOCLINUX).
var deniedIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX}

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retNOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retACCES = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
)

// asm is a tiny assembler with named jump targets.
type asm struct {
	ins    []bpf.Instruction
	labels map[string]int
	jumps  []jump
}

type jump struct {
	at          int
	true, false string // "" is the next instruction
}

func (a *asm) add(i bpf.Instruction) { a.ins = append(a.ins, i) }
func (a *asm) label(name string)     { a.labels[name] = len(a.ins) }
func (a *asm) ret(v uint32)          { a.add(bpf.RetConstant{Val: v}) }
func (a *asm) load(off uint32)       { a.add(bpf.LoadAbsolute{Off: off, Size: 4}) }

// jif jumps to t when the accumulator passes cond against v, else to f.
func (a *asm) jif(cond bpf.JumpTest, v uint32, t, f string) {
	a.jumps = append(a.jumps, jump{len(a.ins), t, f})
	a.add(bpf.JumpIf{Cond: cond, Val: v})
}

func (a *asm) assemble() ([]unix.SockFilter, error) {
	for _, j := range a.jumps {
		ji := a.ins[j.at].(bpf.JumpIf)
		for _, side := range []struct {
			name string
			skip *uint8
		}{{j.true, &ji.SkipTrue}, {j.false, &ji.SkipFalse}} {
			if side.name == "" {
				continue
			}
			to, ok := a.labels[side.name]
			if !ok {
				return nil, fmt.Errorf("seccomp: no label %q", side.name)
			}
			d := to - j.at - 1
			if d < 0 || d > 255 {
				return nil, fmt.Errorf("seccomp: jump to %q out of range (%d)", side.name, d)
			}
			*side.skip = uint8(d)
		}
		a.ins[j.at] = ji
	}
	raw, err := bpf.Assemble(a.ins)
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

// buildFilter is the program for one command.
func buildFilter(spec filterSpec) ([]unix.SockFilter, error) {
	if nativeArch == 0 {
		return nil, errors.New("no seccomp filter for this architecture (" + archName + ")")
	}
	a := &asm{labels: map[string]int{}}
	a.load(offArch)
	a.jif(bpf.JumpEqual, nativeArch, "native", "")
	a.ret(retEPERM) // i386 on x86-64, arm32 on arm64, anything else
	a.label("native")
	a.load(offNr)
	if x32Bit != 0 {
		a.jif(bpf.JumpGreaterOrEqual, x32Bit, "nosys", "")
	}
	denied := append(append([]uint32{}, deniedCommon...), deniedArch...)
	if spec.truncate {
		denied = append(denied, unix.SYS_TRUNCATE)
	}
	for _, nr := range denied {
		a.jif(bpf.JumpEqual, nr, "eperm", "")
	}
	// clone3's flags are behind a pointer the filter cannot read: ENOSYS
	// makes libc fall back to clone, whose flags it can.
	a.jif(bpf.JumpEqual, unix.SYS_CLONE3, "nosys", "")
	a.jif(bpf.JumpEqual, unix.SYS_CLONE, "clone", "")
	a.jif(bpf.JumpEqual, unix.SYS_IOCTL, "ioctl", "")
	a.jif(bpf.JumpEqual, unix.SYS_SOCKET, "socket", "")
	a.ret(retAllow)

	a.label("clone")
	a.load(offArgs + cloneFlagsArg*8) // low half: CLONE_NEWUSER is there
	a.jif(bpf.JumpBitsSet, unix.CLONE_NEWUSER, "eperm", "")
	a.ret(retAllow)

	a.label("ioctl")
	a.load(offArgs + 1*8) // the request, an unsigned int: the low half only
	for _, req := range deniedIoctls {
		a.jif(bpf.JumpEqual, req, "eperm", "")
	}
	a.ret(retAllow)

	a.label("socket")
	a.load(offArgs) // the family, an int: the low half only
	for _, fam := range spec.sockets {
		a.jif(bpf.JumpEqual, fam, "allow", "")
	}
	a.ret(retACCES)

	a.label("allow")
	a.ret(retAllow)
	a.label("eperm")
	a.ret(retEPERM)
	a.label("nosys")
	a.ret(retNOSYS)
	return a.assemble()
}

// loadFilter installs the filter on the calling thread only (no TSYNC):
// the thread that forks the command. no_new_privs must be set.
func loadFilter(prog []unix.SockFilter) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}
