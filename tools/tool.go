// Package tools holds every capability the model can call: the Tool
// interface, the registry that validates arguments and asks the permission
// gate, and one file per tool family.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"polly/tools/sandbox"
)

// Tool is one function the model can call.
type Tool interface {
	Name() string
	Description() string
	// Schema is the JSON schema of the arguments object.
	Schema() *jsonschema.Schema
	// Access says what the call will touch, so the permission gate can decide
	// before Run. Arguments are already validated.
	Access(ctx context.Context, args json.RawMessage) (Access, error)
	// Run executes the call. A returned error becomes an error result the
	// model can act on; it never ends the loop.
	Run(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is what a tool produced.
type Result struct {
	Output   string         // the text the model sees (before the harness offloads it)
	IsError  bool           // the call failed; Output says why
	ExitCode *int           // run_command only
	Diff     string         // unified diff of a file change, for the UI
	Files    []string       // files this call wrote or created (project-relative when inside the root)
	Created  []string       // the subset of Files that did not exist before (new artifacts)
	Meta     map[string]any // anything else the UI may show (e.g. a sub-agent result)
	// Keep: the output is instructions the model works by (a loaded skill):
	// it is never offloaded, and stays whole while its task runs.
	Keep bool
	// Untrusted names where outside content in Output came from (a URL,
	// an MCP server and tool); that content is inside an Envelope. The
	// session has then read untrusted data.
	Untrusted string
}

// Errorf builds an error result.
func Errorf(format string, a ...any) Result {
	return Result{Output: "error: " + fmt.Sprintf(format, a...), IsError: true}
}

// AccessKind is the kind of effect a call has, from the permission policy's
// point of view.
type AccessKind int

const (
	AccessRead     AccessKind = iota // reads files or the store; never asks
	AccessWrite                      // writes files
	AccessExecute                    // runs a shell command
	AccessNetwork                    // fetches a URL
	AccessMemory                     // writes the workspace memory, which enters every later session's prompt
	AccessExternal                   // calls a tool of an MCP server: anything that server can do
)

func (k AccessKind) String() string {
	switch k {
	case AccessRead:
		return "read"
	case AccessWrite:
		return "write"
	case AccessExecute:
		return "execute"
	case AccessNetwork:
		return "network"
	case AccessMemory:
		return "memory"
	case AccessExternal:
		return "external"
	}
	return fmt.Sprintf("access(%d)", int(k))
}

// Access describes what one call will touch.
type Access struct {
	Kind    AccessKind
	Paths   []string // files or directories read or written (as given; the gate resolves them)
	Command string   // AccessExecute: the shell command line
	Network bool     // AccessExecute: the call asks for network access inside the sandbox
	URL     string   // AccessNetwork: the URL
	Preview string   // what a person deciding should see: a diff, the command, the URL
	// Untrusted (AccessMemory): the untrusted sources — fetched pages, MCP
	// results — the session had read before this write; empty when none.
	Untrusted []string
}

// Gate decides whether a call may run. A nil error allows it; a *Denied
// error refuses it with a reason the model can act on.
type Gate interface {
	Allow(ctx context.Context, tool string, a Access) error
}

// Denied is a refusal from the permission gate.
type Denied struct {
	Reason string
}

func (d *Denied) Error() string { return "permission denied: " + d.Reason }

// IsDenied reports whether err is a permission refusal.
func IsDenied(err error) bool {
	var d *Denied
	return errors.As(err, &d)
}

// Granter is a Gate that also says how an allowed call may run: the
// returned context carries the command's sandbox grant (sandbox.WithGrant).
// The registry prefers it over Allow.
type Granter interface {
	Gate
	Grant(ctx context.Context, tool string, a Access) (context.Context, error)
}

// AllowAll is a gate that allows everything, as yolo does: commands run in
// workspace-write with network.
type AllowAll struct{}

func (AllowAll) Allow(context.Context, string, Access) error { return nil }

func (AllowAll) Grant(ctx context.Context, _ string, _ Access) (context.Context, error) {
	return sandbox.WithGrant(ctx, sandbox.Grant{Level: sandbox.WorkspaceWrite, Network: true}), nil
}

// Func is a Tool built from a typed argument struct A. Its JSON schema is
// inferred from A: fields without omitempty are required, the `jsonschema`
// tag is the description.
type Func[A any] struct {
	name, desc string
	schema     func() *jsonschema.Schema
	run        func(ctx context.Context, a A) (Result, error)
	access     func(ctx context.Context, a A) (Access, error)
}

// New builds a read-only typed tool. Use WithAccess for tools with effects.
// fix, when non-nil, adjusts the inferred schema (enums, bounds).
//
// The schema is inferred on first use (the registry's Add): listing the
// tools' names, as every start does to check the config's rules, does not
// pay for reflecting over every argument struct.
func New[A any](name, desc string, run func(ctx context.Context, a A) (Result, error), fix func(*jsonschema.Schema)) *Func[A] {
	schema := sync.OnceValue(func() *jsonschema.Schema {
		s, err := jsonschema.For[A](nil)
		if err != nil {
			// A programming error in a tool definition: fail loudly
			// (every tool is added to a registry when a session opens).
			panic(fmt.Sprintf("tool %s: schema: %v", name, err))
		}
		if fix != nil {
			fix(s)
		}
		return s
	})
	return &Func[A]{name: name, desc: desc, schema: schema, run: run}
}

// WithAccess sets how the tool describes its effects to the permission gate.
func (f *Func[A]) WithAccess(access func(ctx context.Context, a A) (Access, error)) *Func[A] {
	f.access = access
	return f
}

func (f *Func[A]) Name() string               { return f.name }
func (f *Func[A]) Description() string        { return f.desc }
func (f *Func[A]) Schema() *jsonschema.Schema { return f.schema() }

func (f *Func[A]) decode(args json.RawMessage) (A, error) {
	var a A
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(args)))
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("arguments do not match: %w", err)
	}
	return a, nil
}

func (f *Func[A]) Access(ctx context.Context, args json.RawMessage) (Access, error) {
	if f.access == nil {
		return Access{Kind: AccessRead}, nil
	}
	a, err := f.decode(args)
	if err != nil {
		return Access{}, err
	}
	return f.access(ctx, a)
}

func (f *Func[A]) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	a, err := f.decode(args)
	if err != nil {
		return Result{}, err
	}
	return f.run(ctx, a)
}

// Enum sets the allowed values of a string property found by path, e.g.
// Enum(s, []string{"todo","done"}, "steps", "[]", "status").
func Enum(s *jsonschema.Schema, values []string, path ...string) {
	t := s
	for _, p := range path {
		if p == "[]" {
			t = t.Items
		} else {
			t = t.Properties[p]
		}
		if t == nil {
			panic(fmt.Sprintf("schema path %v not found", path))
		}
	}
	t.Enum = make([]any, len(values))
	for i, v := range values {
		t.Enum[i] = v
	}
}

// typeName is used in error messages.
func typeName(v any) string {
	if v == nil {
		return "null"
	}
	switch v.(type) {
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return reflect.TypeOf(v).String()
}

// ctxKey is the context key of the one value of type T a call carries;
// each value has a type of its own, so keys never collide.
type ctxKey[T any] struct{}

func withValue[T any](ctx context.Context, v T) context.Context {
	return context.WithValue(ctx, ctxKey[T]{}, v)
}

// valueOf returns the value set by withValue, or T's zero value.
func valueOf[T any](ctx context.Context) T {
	v, _ := ctx.Value(ctxKey[T]{}).(T)
	return v
}

type callerID string

// WithCaller marks ctx with the agent making a tool call, so a permission
// question can say who asks (a sub-agent's call looks like any other).
func WithCaller(ctx context.Context, agentID string) context.Context {
	return withValue(ctx, callerID(agentID))
}

// CallerOf returns the agent id set by WithCaller, or "".
func CallerOf(ctx context.Context) string { return string(valueOf[callerID](ctx)) }

// gated is the gate a running call was allowed by, for effects the call
// discovers only while it runs (a redirect to another host).
type gated struct {
	gate Gate
	tool string
}

// withGate marks ctx with the gate and tool name of the call being run.
func withGate(ctx context.Context, g Gate, tool string) context.Context {
	return withValue(ctx, gated{g, tool})
}

// recheck asks the gate of the running call about a further access. With
// no gate in ctx (a tool run outside Registry.Execute) it denies: an
// access nobody judged is never made.
func recheck(ctx context.Context, a Access) error {
	g := valueOf[gated](ctx)
	if g.gate == nil {
		return &Denied{Reason: "no permission policy to approve " + a.URL}
	}
	return g.gate.Allow(ctx, g.tool, a)
}

type hookDecision string

// WithHookDecision marks ctx with a PreToolUse hook's permission decision
// ("allow", "deny" or "ask") for the gate to honour.
func WithHookDecision(ctx context.Context, decision string) context.Context {
	return withValue(ctx, hookDecision(decision))
}

// HookDecisionOf returns the decision set by WithHookDecision, or "".
func HookDecisionOf(ctx context.Context) string { return string(valueOf[hookDecision](ctx)) }
