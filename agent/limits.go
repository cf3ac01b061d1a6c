package agent

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"polly/memory/chat"
	"polly/memory/tokens"
	"polly/memory/window"
)

// LimitStore remembers the context limit a provider stated for a model in
// a context-length error. It is the one cache of learned limits: the app
// gives the model catalogue's (agent/models: kept in the user's cache dir,
// and the window every later resolution of that model starts from);
// without one, a session keeps them in memory (memLimits).
type LimitStore interface {
	Limit(provider, model string) int // 0: none learned
	SaveLimit(provider, model string, tokens int) error
	Where() string // for messages: where the limits are kept
}

// limitPatterns are how providers state the limit ("maximum context length
// is 8192 tokens", "prompt is too long: 210000 tokens > 200000 maximum",
// llama.cpp's "available context size (4096 tokens)", …). The first
// capture group is the limit. Compiled on first use, not at start-up.
var limitPatterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`(?i)maximum context length (?:is|of) (\d[\d,]*)`),
		regexp.MustCompile(`(?i)tokens? > (\d[\d,]*) maximum`),
		regexp.MustCompile(`(?i)context (?:size|window|length|limit) (?:is |of |= ?|: ?)?\(?(\d[\d,]*)(?: tokens)?\)?`),
		regexp.MustCompile(`(?i)(?:max_model_len|n_ctx(?:_slot)?|context_length|max_context_length)\s*[=:]?\s*\(?(\d[\d,]*)`),
		regexp.MustCompile(`(?i)(?:limit|maximum) of (\d[\d,]*) tokens`),
		regexp.MustCompile(`(?i)(\d[\d,]*)[- ]token (?:context|limit)`),
	}
})

// ParseContextLimit finds the limit a context-length error states.
func ParseContextLimit(msg string) (int, bool) {
	for _, re := range limitPatterns() {
		m := re.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		if err == nil && n >= 256 && n <= 100_000_000 {
			return n, true
		}
	}
	return 0, false
}

// memLimits keeps learned limits for the life of the process, when there
// is no store that outlives it.
type memLimits struct {
	mu      sync.Mutex
	learned map[string]int
}

func (m *memLimits) Limit(provider, model string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.learned[provider+"/"+model]
}

func (m *memLimits) SaveLimit(provider, model string, tokens int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.learned[provider+"/"+model] = tokens
	return nil
}

func (m *memLimits) Where() string { return "" }

// ensureLimits gives Deps a limit store when it has none; OpenSession and
// newAgent call it before any copy of Deps is made (bind copies them per
// persona: all share the one store).
func (d *Deps) ensureLimits() {
	if d.Limits == nil {
		d.Limits = &memLimits{learned: map[string]int{}}
	}
}

// limitFor is the context limit learned for a model of this provider; 0
// when none.
func (d *Deps) limitFor(model string) int {
	return d.Limits.Limit(d.Model.Provider, model)
}

// learnLimit records a model's stated limit; it reports whether the limit
// is new and smaller than what was known.
func (d *Deps) learnLimit(model string, tokens int) (bool, error) {
	if known := d.limitFor(model); known > 0 && known <= tokens {
		return false, nil
	}
	if err := d.Limits.SaveLimit(d.Model.Provider, model, tokens); err != nil {
		return true, fmt.Errorf("store the context limit of %s: %w", model, err)
	}
	return true, nil
}

// contextWindow is the model's window: the configured one (window.UnknownWindow
// when unknown), or the limit the provider stated when that is smaller.
func (a *Agent) contextWindow() (tokens int, learned bool) {
	w := a.deps.Model.ContextWindow
	if w <= 0 {
		w = window.UnknownWindow
	}
	if l := a.deps.limitFor(a.model()); l > 0 && l < w {
		return l, true
	}
	return w, false
}

// budget is the context the agent may fill (window.Budget).
func (a *Agent) budget() int {
	w, _ := a.contextWindow()
	return window.Budget(w, a.deps.Model.MaxOutput, a.deps.Model.SafetyMargin)
}

// fitSystem returns the system prompt to send: sys when it and the tool
// schemas fit the budget with room to work; else, once told, the persona
// prompt alone (the workspace memory files left out), so a task on a tiny
// window goes on. It fails only when even that does not fit: no compaction
// can help, and the user must know why.
func (a *Agent) fitSystem(sys string) (string, error) {
	tools, b := a.toolTokens(), a.budget()
	full := a.systemTokens(sys) + tools
	if full < b*9/10 {
		return sys, nil
	}
	w, learned := a.contextWindow()
	where := "its configured context window"
	if learned {
		where = "the limit its provider stated"
	}
	lean := a.persona.SystemPrompt
	if lean != sys {
		if n := tokens.Message(a.counter, chat.SystemText(lean)) + tools; n < b*9/10 {
			a.warnOnce("lean-prompt", fmt.Sprintf("model %s: %s is %d tokens (a budget of %d after reserving output), but the system prompt with the workspace memory files and the tool schemas take %d tokens; sending the persona prompt alone (%d tokens with the tools) so the task goes on — shorten the workspace memory files or give this model a shorter tool list (%s)",
				a.model(), where, w, b, full, n, a.toolsKey()))
			return lean, nil
		}
	}
	return "", fmt.Errorf("model %s: %s is %d tokens (a budget of %d after reserving output), but the system prompt and tool schemas alone take %d tokens; use a model with a bigger window, give it a shorter tool list (%s) or shorten the workspace memory files",
		a.model(), where, w, b, full, a.toolsKey())
}
