package sandbox

import "os"

// RunTests is the whole TestMain of a test package whose tests run
// commands: run_command re-executes the running binary as the sandbox
// helper, so the test binary must dispatch that first, then run its tests.
// Use it as func TestMain(m *testing.M) { sandbox.RunTests(m) }.
func RunTests(m interface{ Run() int }) {
	RunHelperIfAsked()
	os.Exit(m.Run())
}
