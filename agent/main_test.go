package agent

import (
	"os"
	"testing"

	"polly/tools/sandbox"
)

// TestMain lets this test binary serve as the sandbox helper: run_command
// re-executes the running binary (os.Executable) with a hidden subcommand;
// and as the step benchmark's model server, in a process of its own.
func TestMain(m *testing.M) {
	sandbox.RunHelperIfAsked()
	serveStepModelIfAsked()
	os.Exit(m.Run())
}
