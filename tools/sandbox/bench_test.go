package sandbox

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cpuNow is the CPU time (user + system) of this process and of its
// reaped children, plus that of the given long-lived helpers and of the
// children they reaped (the commands).
func cpuNow(helpers []int) time.Duration {
	var self, kids unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &self)
	unix.Getrusage(unix.RUSAGE_CHILDREN, &kids)
	d := time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
	for _, pid := range helpers {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime, in clock ticks
			t, _ := strconv.ParseInt(f[i], 10, 64)
			d += time.Duration(t) * time.Second / 100
		}
	}
	return d
}

// helperPIDs are the Runner's helper processes.
func (r *Runner) helperPIDs() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var pids []int
	for h := range r.all {
		if h.cmd.Process != nil {
			pids = append(pids, h.cmd.Process.Pid)
		}
	}
	return pids
}

// BenchmarkBashTrue is the baseline: bash -c true without the sandbox.
func BenchmarkBashTrue(b *testing.B) {
	c0 := cpuNow(nil)
	for b.Loop() {
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuNow(nil)-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkCommandTrue is `true` through a Runner whose helper has
// started (as in Polly after the first command): what the sandbox adds
// per command, wall (ns/op) and CPU of Polly, the helper and bash
// (cpu-ns/op), against BenchmarkBashTrue.
func BenchmarkCommandTrue(b *testing.B) {
	for _, c := range []struct {
		name string
		g    Grant
	}{
		{"read-only", Grant{Level: ReadOnly}},
		{"workspace-write", Grant{Level: WorkspaceWrite}},
		{"workspace-write+network", Grant{Level: WorkspaceWrite, Network: true}},
		{"unsandboxed", Grant{Level: Unsandboxed}},
	} {
		b.Run(c.name, func(b *testing.B) {
			root := b.TempDir()
			os.MkdirAll(root+"/.git/hooks", 0o755)
			os.MkdirAll(root+"/.agent", 0o755)
			pol := Build(Plan{Grant: c.g, Root: root, Command: "true"})
			var r Runner
			defer r.Close()
			env := CommandEnv(os.Environ(), nil, nil, nil)
			if _, err := r.Run(context.Background(), pol, "true", root, env, io.Discard, time.Second); err != nil {
				b.Fatal(err)
			}
			helpers := r.helperPIDs()
			c0 := cpuNow(helpers)
			for b.Loop() {
				res, err := r.Run(context.Background(), pol, "true", root, env, io.Discard, time.Second)
				if err != nil || res.Code != 0 {
					b.Fatal(err, res)
				}
			}
			b.ReportMetric(float64(cpuNow(helpers)-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}
