package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"polly/memory/chat"
)

type echoArgs struct {
	Text  string `json:"text" jsonschema:"what to echo"`
	Times int    `json:"times,omitempty" jsonschema:"how many times"`
}

func echoTool() Tool {
	return New("echo", "echo text", func(ctx context.Context, a echoArgs) (Result, error) {
		if a.Text == "boom" {
			panic("boom")
		}
		return Result{Output: strings.Repeat(a.Text, max(a.Times, 1))}, nil
	}, nil)
}

type denyAll struct{}

func (denyAll) Allow(context.Context, string, Access) error { return &Denied{Reason: "no"} }

func TestRegistryExecute(t *testing.T) {
	r := NewRegistry(echoTool())
	ctx := context.Background()
	allow := AllowAll{}
	cases := []struct {
		name, tool, args string
		allowed          []string
		gate             Gate
		wantErr          bool
		want             string
	}{
		{"ok", "echo", `{"text":"hi","times":2}`, nil, allow, false, "hihi"},
		{"empty args", "echo", ``, nil, allow, true, `missing properties: ["text"]`},
		{"malformed json", "echo", `{"text":"hi"`, nil, allow, true, "not valid JSON"},
		{"not an object", "echo", `["hi"]`, nil, allow, true, "must be a JSON object, got array"},
		{"wrong type", "echo", `{"text":5}`, nil, allow, true, "text"},
		{"extra field", "echo", `{"text":"a","bogus":1}`, nil, allow, true, "bogus"},
		{"unknown tool", "nope", `{}`, nil, allow, true, `unknown tool "nope". Available tools: echo`},
		{"not allowed", "echo", `{"text":"a"}`, []string{"other"}, allow, true, "Available tools: other"},
		{"denied", "echo", `{"text":"a"}`, nil, denyAll{}, true, "permission denied: no"},
		{"panic", "echo", `{"text":"boom"}`, nil, allow, true, "crashed: boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := r.Execute(ctx, chat.ToolCall{ID: "1", Name: c.tool, Arguments: c.args}, Exec{Gate: c.gate, Allowed: c.allowed})
			if res.IsError != c.wantErr {
				t.Fatalf("IsError = %v, want %v (output %q)", res.IsError, c.wantErr, res.Output)
			}
			if !strings.Contains(res.Output, c.want) {
				t.Fatalf("output %q does not contain %q", res.Output, c.want)
			}
		})
	}
}

// A call without a permission gate is refused and the tool never runs:
// missing policy fails closed.
func TestExecuteWithoutGateDenies(t *testing.T) {
	ran := 0
	tool := New("count", "counts its runs", func(ctx context.Context, a echoArgs) (Result, error) {
		ran++
		return Result{Output: "ran"}, nil
	}, nil)
	res := NewRegistry(tool).Execute(context.Background(), chat.ToolCall{ID: "1", Name: "count", Arguments: `{"text":"x"}`}, Exec{})
	if !res.IsError || !strings.Contains(res.Output, "permission denied") || !strings.Contains(res.Output, "no permission policy") {
		t.Fatalf("nil gate: %+v, want a permission denial", res)
	}
	if ran != 0 {
		t.Fatalf("the tool ran %d time(s) without a gate", ran)
	}
	res = NewRegistry(tool).Execute(context.Background(), chat.ToolCall{ID: "2", Name: "count", Arguments: `{"text":"x"}`}, Exec{Gate: AllowAll{}})
	if res.IsError || ran != 1 {
		t.Fatalf("with a gate: %+v, ran %d", res, ran)
	}
}

func TestSpecsCarrySchema(t *testing.T) {
	specs := NewRegistry(echoTool()).Specs(nil)
	if len(specs) != 1 || specs[0].Name != "echo" {
		t.Fatalf("specs = %+v", specs)
	}
	props, _ := specs[0].Parameters["properties"].(map[string]any)
	if _, ok := props["text"]; !ok {
		t.Fatalf("schema lacks text: %v", specs[0].Parameters)
	}
	req, _ := specs[0].Parameters["required"].([]any)
	if len(req) != 1 || req[0] != "text" {
		t.Fatalf("required = %v", req)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
