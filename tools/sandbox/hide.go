package sandbox

import (
	"strings"
	"unsafe"
)

// secretFlags take a value that must not be readable in /proc/<pid>/cmdline.
var secretFlags = []string{"api-key"}

// HideSecretArgs returns a copy of args and overwrites, in the process's
// original argument memory (what /proc/<pid>/cmdline shows), the values of
// flags that carry secrets (--api-key KEY, --api-key=KEY). Call it before
// anything else keeps a reference to os.Args.
func HideSecretArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.Clone(a)
	}
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, val, eq := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !isSecretFlag(name) {
			continue
		}
		switch {
		case eq:
			wipe(a[len(a)-len(val):])
		case i+1 < len(args):
			wipe(args[i+1])
		}
	}
	return out
}

func isSecretFlag(name string) bool {
	for _, f := range secretFlags {
		if name == f {
			return true
		}
	}
	return false
}

// wipe overwrites a string's bytes in place. Only for strings backed by
// the process's argument memory (os.Args), which is writable.
func wipe(s string) {
	if len(s) == 0 {
		return
	}
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	for i := range b {
		b[i] = '*'
	}
}
