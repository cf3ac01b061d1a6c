package tools

import (
	"testing"

	"polly/tools/sandbox"
)

// TestMain lets this test binary serve as the sandbox helper.
func TestMain(m *testing.M) { sandbox.RunTests(m) }
