package agent

import (
	"fmt"
	"slices"

	"polly/agent/llm"
	"polly/memory/window"
	"polly/personas"
)

// Binding is what an agent needs of its model: the client for the model's
// provider, the model (window, prices) and the context numbers that
// follow from it.
type Binding struct {
	LLM     llm.Streamer
	Model   Model
	Context window.Settings
}

// ModelResolver resolves a persona's model: its own ("provider/model", or
// a bare name on the default provider) or, when it names none, the
// default. agent/app implements it; an error refuses the persona with a
// message the user can act on (an unknown provider, a missing key).
type ModelResolver interface {
	ResolveModel(p personas.Persona) (Binding, error)
}

// bind resolves the agent's model against the shared deps. Without a
// resolver every agent uses Deps.LLM, Deps.Model and Deps.Context. It runs
// before each run, so a window discovered or learned since then applies.
func (a *Agent) bind() error {
	if a.root.Models == nil {
		a.deps = a.root
		return nil
	}
	b, err := a.root.Models.ResolveModel(a.persona)
	if err != nil {
		return fmt.Errorf("persona %s cannot run: %w", a.persona.ID, err)
	}
	d := *a.root
	d.LLM, d.Model, d.Context = b.LLM, b.Model, b.Context
	before := a.deps.Model.Tools
	a.deps = &d
	if !slices.Equal(before, d.Model.Tools) {
		a.buildTools() // the model's tool allow-list changed
	}
	return nil
}
