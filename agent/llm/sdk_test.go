package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"polly/agent/llm"
	"polly/agent/llmtest"
)

// TestTheSDKMakesTheCalls: what comes back from the wire was read by
// openai-go. An HTTP error is the SDK's *openai.Error (with the request it
// made), an error event its *ssestream.StreamError, under Polly's *Error;
// the debug log is a middleware (option.WithMiddleware), which only the
// SDK's request pipeline runs, and it logs each chat and models request
// with the status the server gave; a model's own fields are the SDK
// Model's raw JSON.
func TestTheSDKMakesTheCalls(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Fail{Status: 400, Code: "context_length_exceeded", Message: "This model's maximum context length is 8192 tokens."},
		llmtest.StreamError{AfterText: "par", Code: "server_error", Message: "upstream overloaded"},
		llmtest.Text("ok"))
	var logged syncBuffer
	c := newClient(t, srv.URL(), func(cfg *llm.Config) {
		cfg.MaxRetries = -1
		cfg.Log = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})

	_, err := c.Stream(context.Background(), ask("hi"), llm.Observer{})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "context_length_exceeded" ||
		apiErr.Request == nil || apiErr.Request.URL.Path != "/v1/chat/completions" || llm.KindOf(err) != llm.KindContextLength {
		t.Fatalf("HTTP 400: %v (%T), want an *openai.Error under a context_length *llm.Error", err, err)
	}

	_, err = c.Stream(context.Background(), ask("hi"), llm.Observer{})
	var streamErr *ssestream.StreamError
	if !errors.As(err, &streamErr) || !bytes.Contains(streamErr.Event.Data, []byte("upstream overloaded")) {
		t.Fatalf("error event: %v (%T), want an *ssestream.StreamError", err, err)
	}

	if resp, err := c.Stream(context.Background(), ask("hi"), llm.Observer{}); err != nil || resp.Message.Content != "ok" {
		t.Fatalf("reply %+v, %v", resp, err)
	}
	srv.SetModelsResponse(http.StatusOK, "application/json", `{"object":"list","data":[{"id":"qwen3","object":"model","max_model_len":16000}]}`)
	models, err := c.Models(context.Background())
	if err != nil || len(models) != 1 || models[0].ID != "qwen3" {
		t.Fatalf("models %+v, %v", models, err)
	}
	var extra struct {
		MaxModelLen int `json:"max_model_len"`
	}
	if err := json.Unmarshal(models[0].Raw, &extra); err != nil || extra.MaxModelLen != 16000 {
		t.Errorf("raw model %s: max_model_len %d, %v", models[0].Raw, extra.MaxModelLen, err)
	}

	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	// "sent" is the length of the body the server received: Polly's own
	// encoding, put on the SDK's request by the call's tap.
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the server received %d chat requests, want 3", len(reqs))
	}
	sent := func(i int) string {
		return fmt.Sprintf("method=POST path=/v1/chat/completions sent=%d ", len(reqs[i].Raw))
	}
	want := []string{
		sent(0), "status=400",
		sent(1), "status=200",
		sent(2), "status=200",
		"method=GET path=/v1/models sent=0", "status=200",
	}
	if len(lines) != len(want)/2 {
		t.Fatalf("debug log has %d lines, want one per request:\n%s", len(lines), logged.String())
	}
	for i, line := range lines {
		if !strings.Contains(line, "msg=\"llm request\"") || !strings.Contains(line, want[2*i]) ||
			!strings.Contains(line, want[2*i+1]) || strings.Contains(line, "test-key") {
			t.Errorf("log line %d = %q, want %q and %q in it and no key", i, line, want[2*i], want[2*i+1])
		}
	}
}

// syncBuffer is a bytes.Buffer a logger and a test can share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestOnlyPollysHeadersReachTheWire: openai.NewClient reads OPENAI_* from
// the environment and adds telemetry headers; none of it reaches the
// provider. With an Azure-style configuration (api-key, no bearer key) and
// an OpenAI key, organisation, project, base URL and custom headers in the
// environment, the chat request and the model listing carry exactly
// Polly's headers and go to the configured base URL.
func TestOnlyPollysHeadersReachTheWire(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"data":[{"id":"gpt-4o"}]}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	}))
	defer hs.Close()
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_ADMIN_KEY", "sk-admin-from-env")
	t.Setenv("OPENAI_ORG_ID", "org-from-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: yes\nAuthorization: Bearer from-env")

	c := newClient(t, hs.URL+"/openai/v1?api-version=2025-04-01-preview", func(cfg *llm.Config) {
		cfg.APIKey = ""
		cfg.Headers = map[string]string{"api-key": "azure-secret"}
		cfg.UserAgent = "Polly/1.2.3"
	})
	if _, err := c.Stream(context.Background(), ask("hi"), llm.Observer{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListModels(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("%d requests reached the configured server, want 2", len(seen))
	}
	wants := []map[string]string{
		{"Accept": "application/json", "Accept-Encoding": "gzip", "Api-Key": "azure-secret", "Content-Length": "", "Content-Type": "application/json", "User-Agent": "Polly/1.2.3"},
		{"Accept": "application/json", "Accept-Encoding": "gzip", "Api-Key": "azure-secret", "User-Agent": "Polly/1.2.3"},
	}
	for i, h := range seen {
		var names []string
		for k := range h {
			names = append(names, k)
		}
		slices.Sort(names)
		var want []string
		for k, v := range wants[i] {
			want = append(want, k)
			if v != "" && h.Get(k) != v {
				t.Errorf("request %d: %s = %q, want %q", i, k, h.Get(k), v)
			}
		}
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("request %d carried headers %v, want exactly %v: %v", i, names, want, h)
		}
	}
}

// TestProductionBinaryLinksSDK: the binary's calls are openai-go's; the
// package that makes them imports it.
func TestProductionBinaryLinksSDK(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "polly").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps polly: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, want := range []string{"polly/agent/llm", "github.com/openai/openai-go/v3", "github.com/openai/openai-go/v3/option", "github.com/openai/openai-go/v3/packages/ssestream"} {
		if !slices.Contains(deps, want) {
			t.Errorf("the production binary does not link %s", want)
		}
	}
}

// TestModelListShapes: a list served as text/plain (some local servers and
// proxies) is still a list; an answer without a "data" list is not one.
func TestModelListShapes(t *testing.T) {
	srv := llmtest.NewServer(t)
	c := newClient(t, srv.URL())
	srv.SetModelsResponse(http.StatusOK, "text/plain; charset=utf-8", `{"data":[{"id":"a","context_length":8192},{"id":"b"}]}`)
	if got, err := c.ListModels(context.Background()); err != nil || strings.Join(got, ",") != "a,b" {
		t.Errorf("text/plain list: %v, %v", got, err)
	}
	for _, body := range []string{`{"models":[]}`, `{"data":null}`, `{"data":"a,b"}`} {
		srv.SetModelsResponse(http.StatusOK, "application/json", body)
		if got, err := c.ListModels(context.Background()); err == nil || !strings.Contains(err.Error(), "not a model list") {
			t.Errorf("%s: %v, %v; want an error", body, got, err)
		}
	}
}
