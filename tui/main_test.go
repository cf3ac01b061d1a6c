package tui

import (
	"testing"

	"polly/tools/sandbox"
)

// TestMain lets this test binary serve as the sandbox helper: run_command
// re-executes the running binary (os.Executable) with a hidden subcommand.
func TestMain(m *testing.M) { sandbox.RunTests(m) }
