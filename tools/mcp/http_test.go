package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"polly/tools"
)

// A streamable-HTTP server on a loopback address: with the configured
// header it is ready and its tools are called; without it the server
// refuses the client, which is marked failed.
func TestStreamableHTTPServer(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "web", Version: "1"}, nil)
	type in struct {
		City string `json:"city"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "weather", Description: "Weather of a city."}, func(ctx context.Context, req *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sunny in " + a.City}}}, nil, nil
	})
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0k" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer hs.Close()

	m := New([]Config{
		{Name: "web", Transport: "http", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer t0k"}, StartupTimeout: 10 * time.Second},
		{Name: "nokey", Transport: "http", URL: hs.URL, StartupTimeout: 10 * time.Second},
	}, "test")
	defer m.Close()
	m.Wait(context.Background())
	if st := status(m, "web"); st.State != Ready || strings.Join(st.Tools, ",") != "mcp__web__weather" {
		t.Fatalf("web = %+v", st)
	}
	if st := status(m, "nokey"); st.State != Failed || st.Err == "" {
		t.Fatalf("a server refusing the client must fail: %+v", st)
	}
	res, err := find(t, m, "mcp__web__weather").Run(context.Background(), json.RawMessage(`{"city":"Oslo"}`))
	if src, inner, ok := tools.OpenEnvelope(res.Output); err != nil || !ok || inner != "sunny in Oslo\n" || src != "MCP server web, tool weather" || res.Untrusted != src {
		t.Fatalf("call = %+v %v", res, err)
	}
}
