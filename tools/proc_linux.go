package tools

import "syscall"

// procAttr puts a command in its own process group and kills its shell when
// Polly dies, even by SIGKILL (PR_SET_PDEATHSIG).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
