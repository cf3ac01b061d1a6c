package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"polly/memory/chat"
)

// Registry maps tool names to tools and runs calls safely: unknown tools,
// malformed JSON, schema violations, permission refusals and panics all
// become error results the model can read.
type Registry struct {
	mu       sync.RWMutex
	tools    map[string]Tool
	resolved map[string]*jsonschema.Resolved
}

// NewRegistry returns a registry holding ts.
func NewRegistry(ts ...Tool) *Registry {
	r := &Registry{tools: map[string]Tool{}, resolved: map[string]*jsonschema.Resolved{}}
	r.Add(ts...)
	return r
}

// Add registers tools; a later tool with the same name replaces the earlier.
func (r *Registry) Add(ts ...Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range ts {
		res, err := t.Schema().Resolve(nil)
		if err != nil {
			panic(fmt.Sprintf("tool %s: resolve schema: %v", t.Name(), err))
		}
		r.tools[t.Name()] = t
		r.resolved[t.Name()] = res
	}
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// Names lists every registered tool, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Spec is a tool as the model sees it.
type Spec struct {
	Name        string
	Description string
	Parameters  map[string]any // JSON schema as a plain map
}

// Specs returns the specs of the named tools in the order given (all tools,
// sorted, when names is nil). Unknown names are skipped.
func (r *Registry) Specs(names []string) []Spec {
	if names == nil {
		names = r.Names()
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	specs := make([]Spec, 0, len(names))
	for _, n := range names {
		t, ok := r.tools[n]
		if !ok {
			continue
		}
		specs = append(specs, Spec{Name: n, Description: t.Description(), Parameters: schemaMap(t.Schema())})
	}
	return specs
}

func schemaMap(s *jsonschema.Schema) map[string]any {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("marshal schema: %v", err))
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(fmt.Sprintf("unmarshal schema: %v", err))
	}
	dropClosedObjects(m)
	return m
}

// dropClosedObjects removes "additionalProperties": false from the schema
// the model sees: it costs tokens on every request, and the registry still
// rejects unknown arguments with a message naming them.
func dropClosedObjects(v any) {
	switch v := v.(type) {
	case map[string]any:
		if ap, ok := v["additionalProperties"].(bool); ok && !ap {
			delete(v, "additionalProperties")
		}
		for _, x := range v {
			dropClosedObjects(x)
		}
	case []any:
		for _, x := range v {
			dropClosedObjects(x)
		}
	}
}

// Exec is how one call is run.
type Exec struct {
	Gate    Gate     // permission gate; nil denies every call (fail closed)
	Allowed []string // tool names the caller may use; nil means every registered tool
	Running func()   // called once the call is allowed, right before the tool runs (durations exclude the wait for approval)
}

// Execute validates and runs one tool call. It never panics and never
// returns a Go error: every failure is an error Result.
func (r *Registry) Execute(ctx context.Context, call chat.ToolCall, ex Exec) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			res = Errorf("tool %s crashed: %v (this is a bug in Polly; try another approach)\n%s", call.Name, p, firstLines(string(debug.Stack()), 12))
		}
	}()
	t, ok := r.Get(call.Name)
	if !ok || (ex.Allowed != nil && !slices.Contains(ex.Allowed, call.Name)) {
		valid := ex.Allowed
		if valid == nil {
			valid = r.Names()
		}
		return Errorf("unknown tool %q. Available tools: %s", call.Name, strings.Join(valid, ", "))
	}
	args := json.RawMessage(strings.TrimSpace(call.Arguments))
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := r.validate(call.Name, args); err != nil {
		return Errorf("%s: %v. Expected arguments: %s", call.Name, err, argSummary(t.Schema()))
	}
	acc, err := t.Access(ctx, args)
	if err != nil {
		return Errorf("%s: %v", call.Name, err)
	}
	// No gate is a wiring mistake, never a reason to run unchecked.
	if ex.Gate == nil {
		return Result{Output: (&Denied{Reason: call.Name + " was not run: no permission policy is configured"}).Error(), IsError: true}
	}
	if g, ok := ex.Gate.(Granter); ok {
		granted, err := g.Grant(ctx, call.Name, acc)
		if err != nil {
			return Result{Output: err.Error(), IsError: true}
		}
		ctx = granted
	} else if err := ex.Gate.Allow(ctx, call.Name, acc); err != nil {
		return Result{Output: err.Error(), IsError: true}
	}
	if err := ctx.Err(); err != nil {
		return Errorf("%s: cancelled before it ran", call.Name)
	}
	if ex.Running != nil {
		ex.Running()
	}
	res, err = t.Run(withGate(ctx, ex.Gate, call.Name), args)
	if err != nil {
		return Errorf("%s: %v", call.Name, err)
	}
	return res
}

// validate checks args against the tool's schema and turns the validator's
// wording into something a model can act on.
func (r *Registry) validate(name string, args json.RawMessage) error {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("arguments are not valid JSON (%v); send one JSON object", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("arguments must be a JSON object, got %s", typeName(v))
	}
	r.mu.RLock()
	res := r.resolved[name]
	r.mu.RUnlock()
	if err := res.Validate(v); err != nil {
		return fmt.Errorf("invalid arguments: %s", cleanValidation(err.Error()))
	}
	return nil
}

// cleanValidation strips the validator's internal prefixes.
func cleanValidation(s string) string {
	s = strings.ReplaceAll(s, "validating root: ", "")
	s = strings.ReplaceAll(s, "validating /properties/", "")
	return s
}

// argSummary renders the argument list compactly: name (type, required).
func argSummary(s *jsonschema.Schema) string {
	var parts []string
	names := s.PropertyOrder
	if len(names) == 0 {
		for n := range s.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	for _, n := range names {
		p := s.Properties[n]
		if p == nil {
			continue
		}
		typ := p.Type
		if typ == "" && len(p.Types) > 0 {
			typ = strings.Join(p.Types, "|")
		}
		req := ""
		if slices.Contains(s.Required, n) {
			req = ", required"
		}
		parts = append(parts, fmt.Sprintf("%s (%s%s)", n, typ, req))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// With returns a new registry holding r's tools plus ts (ts win on a name
// clash). Agents use it to add tools bound to themselves (task_plan,
// delegate_task) without touching the shared registry.
func (r *Registry) With(ts ...Tool) *Registry {
	r.mu.RLock()
	n := &Registry{tools: make(map[string]Tool, len(r.tools)+len(ts)), resolved: make(map[string]*jsonschema.Resolved, len(r.tools)+len(ts))}
	for k, v := range r.tools {
		n.tools[k] = v
		n.resolved[k] = r.resolved[k]
	}
	r.mu.RUnlock()
	n.Add(ts...)
	return n
}
