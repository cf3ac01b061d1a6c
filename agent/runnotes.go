package agent

import (
	"slices"
	"strings"
)

// runNotes is what a run did, as far as the daily log cares.
type runNotes struct {
	worked bool // a tool call other than a lookup ran
	saved  bool // the model wrote to its workspace memory
}

// note records one finished call in the run's notes.
func (r *runNotes) note(tool string, failed bool) {
	if !slices.Contains(lookups, tool) {
		r.worked = true
	}
	if !failed && strings.HasPrefix(tool, "workspace_") && tool != "workspace_read" {
		r.saved = true
	}
}
