package mcp

import "syscall"

// procAttr puts a stdio server in its own process group and kills it when
// Polly dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
