//go:build !linux

package tools

import "syscall"

// procAttr puts a command in its own process group.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
