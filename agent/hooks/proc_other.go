//go:build !linux

package hooks

import "syscall"

// procAttr puts a hook in its own process group (so a timeout kills all of it).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
