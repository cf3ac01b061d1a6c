package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// probeEnv forces what Probe reports, to try each fallback on a kernel
// that has everything: a comma-separated list of
//
//	fail        no Landlock (the sandbox is not active; everything asks)
//	abi=N       Landlock ABI N at most (e.g. abi=5: no scopes, abi=3: no TCP rules)
//	no-userns   the helper gets no namespaces (Landlock-only fallbacks)
//	no-seccomp  no seccomp filter (the sandbox is not active)
const probeEnv = "POLLY_SANDBOX_PROBE"

type forced struct {
	noLandlock, noUserNS, noSeccomp bool
	abi                             int
}

func parseForced(v string) forced {
	var f forced
	for _, w := range strings.Split(v, ",") {
		switch w = strings.TrimSpace(w); {
		case w == "fail":
			f.noLandlock = true
		case w == "no-userns":
			f.noUserNS = true
		case w == "no-seccomp":
			f.noSeccomp = true
		case strings.HasPrefix(w, "abi="):
			f.abi, _ = strconv.Atoi(w[4:])
		}
	}
	return f
}

// Probe reports what the kernel enforces for the sandbox (Landlock ABI,
// seccomp for this architecture, whether namespaces look available), as
// forced by POLLY_SANDBOX_PROBE when set.
func Probe() Kernel {
	v := os.Getenv(probeEnv)
	f := parseForced(v)
	k := Kernel{Forced: v}
	abi, err := llsys.LandlockGetABIVersion()
	switch {
	case f.noLandlock:
		k.NoLandlock = "the Landlock probe failed (simulated by " + probeEnv + "=fail)"
	case err != nil || abi < 1:
		if err == nil {
			err = fmt.Errorf("ABI version %d", abi)
		}
		k.NoLandlock = fmt.Sprintf("the kernel has no Landlock (%v)", err)
	default:
		k.ABI = abi
		if f.abi > 0 && f.abi < abi {
			k.ABI = f.abi
		}
	}
	switch {
	case f.noSeccomp:
		k.NoSeccomp = "no seccomp filter (simulated by " + probeEnv + "=no-seccomp)"
	case nativeArch == 0:
		k.NoSeccomp = "no seccomp filter for this architecture (" + archName + "): foreign system calls could not be refused"
	default:
		action := uint32(unix.SECCOMP_RET_ERRNO)
		const getActionAvail = 2 // SECCOMP_GET_ACTION_AVAIL
		if _, _, e := unix.Syscall(unix.SYS_SECCOMP, getActionAvail, 0, uintptr(unsafe.Pointer(&action))); e != 0 {
			k.NoSeccomp = fmt.Sprintf("the kernel has no seccomp filters (%v)", e)
		} else {
			k.Seccomp = true
		}
	}
	k.UserNS, k.NoUserNS = userNSLikely(f)
	return k
}

// userNSLikely reads the kernel settings that forbid user namespaces.
// Whether they really work is known when the helper starts in them.
func userNSLikely(f forced) (bool, string) {
	if f.noUserNS {
		return false, "simulated by " + probeEnv + "=no-userns"
	}
	if os.Geteuid() == 0 {
		return true, ""
	}
	read := func(p string) string { b, _ := os.ReadFile(p); return strings.TrimSpace(string(b)) }
	if read("/proc/sys/user/max_user_namespaces") == "0" {
		return false, "user namespaces are disabled (user.max_user_namespaces = 0)"
	}
	if read("/proc/sys/kernel/unprivileged_userns_clone") == "0" {
		return false, "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
	}
	if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" {
		return false, "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)"
	}
	return true, ""
}
