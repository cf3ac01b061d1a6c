// Package models is Polly's model catalogue: for each configured provider
// it discovers the models the endpoint serves and their context windows
// (GET /v1/models, llama.cpp's /props, Ollama's /api/show), caches them in
// the user's cache directory, and remembers windows learned from
// context-length errors. agent/config consults it (config.ModelFacts) to
// apply the precedence learned > config > discovered > built-in > unknown.
package models

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"polly/agent/llm"
)

// Model is one model an endpoint serves.
type Model struct {
	ID     string `json:"id"`
	Window int    `json:"window,omitempty"` // tokens; 0 when the endpoint does not say
}

// Listing is what discovery found at one endpoint.
type Listing struct {
	BaseURL   string    `json:"base_url"`
	FetchedAt time.Time `json:"fetched_at"`
	Models    []Model   `json:"models,omitempty"`
	Via       string    `json:"via,omitempty"`   // where the windows came from, e.g. "/v1/models"
	Error     string    `json:"error,omitempty"` // discovery failed: kept so it is not retried on every start
}

// Window returns the window of model id, 0 when unknown.
func (l Listing) Window(id string) int {
	for _, m := range l.Models {
		if m.ID == id {
			return m.Window
		}
	}
	return 0
}

// Endpoint is how to reach a provider.
type Endpoint struct {
	BaseURL string // ends in /v1 for most servers
	APIKey  string
	Headers map[string]string
}

// maxBody bounds a discovery response (OpenRouter's list is about 1 MB).
const maxBody = 8 << 20

// maxShow bounds the per-model /api/show requests to an Ollama server.
const maxShow = 12

// Discover lists the models of ep and their windows. It tries
// GET <base>/models first (vLLM's max_model_len, OpenRouter's
// context_length, context_window); for models still without a window,
// llama.cpp's /props (n_ctx), LM Studio's /api/v0/models
// (max_context_length), then Ollama's /api/show (num_ctx, else
// <arch>.context_length). Only the first request must succeed: the later
// ones are best effort.
func Discover(ctx context.Context, hc *http.Client, ep Endpoint) (Listing, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	base := strings.TrimRight(ep.BaseURL, "/")
	l := Listing{BaseURL: ep.BaseURL}
	// The list comes through the provider client (openai-go),
	// with the key, headers and redirect policy of the chat calls; the
	// window fields are the entries' own, read from their raw JSON.
	list, err := llm.New(llm.Config{BaseURL: ep.BaseURL, APIKey: ep.APIKey, Headers: ep.Headers, HTTPClient: hc, MaxRetries: -1}).Models(ctx)
	if err != nil {
		return l, err
	}
	entries := make([]json.RawMessage, len(list))
	for i, m := range list {
		entries[i] = m.Raw
	}
	models, err := windowsOf(entries)
	if err != nil {
		return l, fmt.Errorf("GET %s/models: %w", base, err)
	}
	l.Models = models
	l.Via = "/models"
	if !missingWindows(models) {
		return l, nil
	}
	root := strings.TrimSuffix(base, "/v1")
	if b, err := get(ctx, hc, ep, http.MethodGet, root+"/props", nil); err == nil {
		if n := nCtx(b); n > 0 {
			for i := range l.Models {
				if l.Models[i].Window == 0 {
					l.Models[i].Window = n
				}
			}
			l.Via = "/props"
			return l, nil
		}
	}
	// LM Studio's own API lists the loaded context (max_context_length).
	if b, err := get(ctx, hc, ep, http.MethodGet, root+"/api/v0/models", nil); err == nil {
		if more, err := parseModelList(b); err == nil {
			found := false
			for i := range l.Models {
				for _, m := range more {
					if m.ID == l.Models[i].ID && l.Models[i].Window == 0 && m.Window > 0 {
						l.Models[i].Window, found = m.Window, true
					}
				}
			}
			if found {
				l.Via = "/api/v0/models"
				return l, nil
			}
		}
	}
	shown := 0
	for i := range l.Models {
		if l.Models[i].Window != 0 || shown == maxShow || ctx.Err() != nil {
			continue
		}
		shown++
		// "name" is what Ollama before 0.5 read; newer ones read "model".
		req, _ := json.Marshal(map[string]string{"model": l.Models[i].ID, "name": l.Models[i].ID})
		b, err := get(ctx, hc, ep, http.MethodPost, root+"/api/show", req)
		if err != nil {
			break // not Ollama, or it is down: the rest would fail the same way
		}
		if n := ollamaWindow(b); n > 0 {
			l.Models[i].Window = n
			l.Via = "/api/show"
		}
	}
	return l, nil
}

func missingWindows(ms []Model) bool {
	for _, m := range ms {
		if m.Window == 0 {
			return true
		}
	}
	return false
}

// get makes one request and returns the body of a 2xx JSON answer.
func get(ctx context.Context, hc *http.Client, ep Endpoint, method, url string, body []byte) ([]byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range ep.Headers {
		req.Header.Set(k, v)
	}
	if ep.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+ep.APIKey)
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read: %w", method, url, err)
	}
	if res.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: HTTP %d", method, url, res.StatusCode)
	}
	return b, nil
}

// parseModelList reads {"data": [{"id": ..., <window fields>}]}.
func parseModelList(b []byte) ([]Model, error) {
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("not a model list: %s", snippet(b))
	}
	if list.Data == nil {
		return nil, errors.New("no \"data\" array in the answer")
	}
	return windowsOf(list.Data)
}

// windowsOf reads each listed model's id and window; entries without an
// id are skipped.
func windowsOf(entries []json.RawMessage) ([]Model, error) {
	out := make([]Model, 0, len(entries))
	for _, e := range entries {
		var m map[string]json.RawMessage
		var id string
		if json.Unmarshal(e, &m) != nil || json.Unmarshal(m["id"], &id) != nil || id == "" {
			continue
		}
		out = append(out, Model{ID: id, Window: windowField(m)})
	}
	if len(out) == 0 && len(entries) > 0 {
		return nil, errors.New("no model in the list has an id")
	}
	return out, nil
}

// windowField finds a model's window among the names servers use.
func windowField(m map[string]json.RawMessage) int {
	for _, k := range []string{"max_model_len", "context_length", "context_window", "loaded_context_length", "max_context_length"} {
		if n := positive(m[k]); n > 0 {
			return n
		}
	}
	var top struct {
		ContextLength json.RawMessage `json:"context_length"`
	}
	if json.Unmarshal(m["top_provider"], &top) == nil {
		return positive(top.ContextLength)
	}
	return 0
}

// positive reads a JSON number (or numeric string) that must be a
// plausible token count.
func positive(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	s := strings.Trim(string(raw), `"`)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 1 || f > 1e9 {
		return 0
	}
	return int(f)
}

// nCtx reads llama.cpp's /props: default_generation_settings.n_ctx, or
// n_ctx at the top level in some versions.
func nCtx(b []byte) int {
	var p struct {
		NCtx     json.RawMessage `json:"n_ctx"`
		Defaults struct {
			NCtx json.RawMessage `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if json.Unmarshal(b, &p) != nil {
		return 0
	}
	if n := positive(p.Defaults.NCtx); n > 0 {
		return n
	}
	return positive(p.NCtx)
}

var numCtx = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s*num_ctx\s+(\d+)`) })

// ollamaWindow reads Ollama's /api/show: the num_ctx parameter (what the
// server really uses) when the model sets one, else the model's trained
// <arch>.context_length.
func ollamaWindow(b []byte) int {
	var s struct {
		Parameters string                     `json:"parameters"`
		ModelInfo  map[string]json.RawMessage `json:"model_info"`
	}
	if json.Unmarshal(b, &s) != nil {
		return 0
	}
	if m := numCtx().FindStringSubmatch(s.Parameters); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			return n
		}
	}
	for k, v := range s.ModelInfo {
		if strings.HasSuffix(k, ".context_length") {
			if n := positive(v); n > 0 {
				return n
			}
		}
	}
	return 0
}

// snippet is the start of a body on one line, for a debug message.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "…"
	}
	return strconv.Quote(s)
}
