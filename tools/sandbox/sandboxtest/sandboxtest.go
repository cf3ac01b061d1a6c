// Package sandboxtest helps tests prove what the sandbox promises: it
// reads /proc to see which processes of a command are still alive, and it
// spells a secret the ways a command could smuggle it out.
package sandboxtest

import (
	"encoding/base64"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Proc is a process as /proc/<pid>/stat and /proc/<pid>/cmdline show it.
type Proc struct {
	PID, PPID, PGrp int
	State           string // "R", "S", "Z" (zombie: dead, not reaped yet), …
	Cmdline         string // the arguments, each ended by a NUL byte
}

// Live reports whether the process runs: a zombie is dead, though kill(2)
// still finds it until its parent (or a container's init) reaps it.
func (p Proc) Live() bool { return p.State != "Z" }

// Read returns process pid; ok is false when it is gone.
func Read(pid int) (p Proc, ok bool) {
	if pid <= 0 {
		return Proc{}, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Proc{}, false
	}
	// The fields after "(comm)", which may itself hold spaces and parens:
	// state ppid pgrp …
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 3 {
		return Proc{}, false
	}
	p = Proc{PID: pid, State: f[0]}
	p.PPID, _ = strconv.Atoi(f[1])
	p.PGrp, _ = strconv.Atoi(f[2])
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	p.Cmdline = string(cmd)
	return p, true
}

// Alive reports whether pid is a living process (not a zombie).
func Alive(pid int) bool {
	p, ok := Read(pid)
	return ok && p.Live()
}

// Living lists the living processes for which keep is true (all of them
// when keep is nil).
func Living(keep func(Proc) bool) []Proc {
	ents, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := Read(pid); ok && p.Live() && (keep == nil || keep(p)) {
			out = append(out, p)
		}
	}
	return out
}

// KeyForms are the spellings of a key a command could smuggle out: as is,
// reversed, hex, and base64 at each of the three alignments (without the
// characters the padding and the end touch).
func KeyForms(key string) []string {
	r := []rune(key)
	slices.Reverse(r)
	forms := []string{key, string(r), fmt.Sprintf("%x", key)}
	for pad := range 3 {
		enc := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", pad) + key))
		start := (pad*4 + 2) / 3
		forms = append(forms, enc[start+1:len(enc)-4])
	}
	return forms
}
