// Command runstat runs a program and prints its wall time in nanoseconds
// and its peak RSS in bytes. It exists for TestStartupGuard: a child
// started straight from the test process reports the test's own RSS as
// its peak (Go starts children with vfork, and Linux carries the parent's
// high-water mark into the child until exec), so a small process in
// between does the measuring.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: runstat PROGRAM [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "runstat:", err)
		os.Exit(1)
	}
	wall := time.Since(start)
	fmt.Println(wall.Nanoseconds(), cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss*1024)
}
