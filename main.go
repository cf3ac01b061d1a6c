// Command polly is a terminal coding agent with a team of personas. This
// file only embeds the workspace template and hands the process's I/O to
// the command line (agent/cli); everything testable lives there.
package main

import (
	"embed"
	"fmt"
	"io/fs"
	"os"

	"polly/agent/cli"
	"polly/tools/sandbox"
	"polly/tui"
)

// template is the workspace seeded on first run (SOUL.md, MEMORY.md, …).
// The all: prefix is needed for its dot-directory .learnings.
//
//go:embed all:.agent-template
var template embed.FS

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	// First: this binary is also the sandbox helper commands run under,
	// and Polly makes itself non-dumpable before it holds any key.
	sandbox.RunHelperIfAsked()
	args := sandbox.HideSecretArgs(os.Args[1:])
	tmpl, err := fs.Sub(template, ".agent-template")
	if err != nil {
		fmt.Fprintln(os.Stderr, "polly: embedded template:", err)
		os.Exit(cli.ExitFailed)
	}
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "polly: working directory:", err)
		os.Exit(cli.ExitFailed)
	}
	home, _ := os.UserHomeDir()
	os.Exit(cli.Main(cli.Env{
		Args:     args,
		Stdin:    os.Stdin,
		Stdout:   os.Stdout,
		Stderr:   os.Stderr,
		Getenv:   os.Getenv,
		Environ:  os.Environ(),
		Dir:      dir,
		Home:     home,
		Template: tmpl,
		Version:  version,
		Signals:  true,
		RunTUI:   tui.Run,
	}))
}
