package hooks

import "syscall"

// procAttr puts a hook in its own process group (so a timeout kills all of
// it) and kills it when Polly dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
