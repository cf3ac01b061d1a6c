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
	"slices"
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
	// Parent is the base model of an adapter (vLLM lists LoRA modules
	// with "parent"); an adapter without a window of its own has its
	// parent's.
	Parent string `json:"parent,omitempty"`
	// Embedding: the model embeds text and cannot chat; it is listed but
	// never offered for a conversation.
	Embedding bool `json:"embedding,omitempty"`
}

// Listing is what discovery found at one endpoint.
type Listing struct {
	BaseURL   string    `json:"base_url"`
	FetchedAt time.Time `json:"fetched_at"`
	Models    []Model   `json:"models,omitempty"`
	Via       string    `json:"via,omitempty"`   // where the windows came from, e.g. "/v1/models"
	Error     string    `json:"error,omitempty"` // discovery failed: kept so it is not retried on every start
}

// Window returns the window of model name (matched as Find matches it),
// 0 when unknown.
func (l Listing) Window(name string) int {
	m, ok := l.Find(name)
	if !ok {
		return 0
	}
	if m.Window == 0 && m.Parent != "" {
		if p, ok := l.exact(m.Parent); ok {
			return p.Window
		}
	}
	return m.Window
}

// Find matches a model name the user wrote to the id the server lists:
// exactly; then without the tag ("llama3.1" is Ollama's
// "llama3.1:latest", and "llama3.1:latest" a server's "llama3.1"); then
// as the unique id it is a prefix of. A llama.cpp server (windows from
// /props) serves one model whatever the request names, so its only model
// matches any name.
func (l Listing) Find(name string) (Model, bool) {
	if m, ok := l.exact(name); ok {
		return m, true
	}
	base, tag, tagged := strings.Cut(name, ":")
	if tagged && tag == "latest" {
		if m, ok := l.exact(base); ok {
			return m, true
		}
	}
	if !tagged {
		if m, ok := l.exact(name + ":latest"); ok {
			return m, true
		}
		if m, ok := l.unique(func(id string) bool { b, _, _ := strings.Cut(id, ":"); return b == name }); ok {
			return m, true
		}
	}
	if name != "" {
		if m, ok := l.unique(func(id string) bool { return strings.HasPrefix(id, name) }); ok {
			return m, true
		}
	}
	if l.Via == "/props" && len(l.Models) == 1 {
		return l.Models[0], true
	}
	return Model{}, false
}

func (l Listing) exact(id string) (Model, bool) {
	for _, m := range l.Models {
		if m.ID == id {
			return m, true
		}
	}
	return Model{}, false
}

// unique returns the one model whose id satisfies match.
func (l Listing) unique(match func(id string) bool) (Model, bool) {
	var found Model
	n := 0
	for _, m := range l.Models {
		if match(m.ID) {
			found, n = m, n+1
		}
	}
	return found, n == 1
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
// <arch>.context_length) — and for Ollama, /api/ps: a loaded model's
// context wins. Only the first request must succeed: the later ones are
// best effort.
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
					if m.ID != l.Models[i].ID {
						continue
					}
					l.Models[i].Embedding = l.Models[i].Embedding || m.Embedding
					if l.Models[i].Window == 0 && m.Window > 0 {
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
	shown, ollama := 0, false
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
		ollama = true
		n, embedding := ollamaShow(b)
		l.Models[i].Embedding = l.Models[i].Embedding || embedding
		if n > 0 {
			l.Models[i].Window = n
			l.Via = "/api/show"
		}
	}
	if ollama {
		// What a loaded model really runs with: Ollama cuts every prompt to
		// its loaded context (4096 by default) without an error, so that
		// number wins over the trained length.
		if b, err := get(ctx, hc, ep, http.MethodGet, root+"/api/ps", nil); err == nil {
			for id, n := range ollamaLoaded(b) {
				for i := range l.Models {
					if l.Models[i].ID == id || l.Models[i].ID+":latest" == id {
						l.Models[i].Window = n
						l.Via = "/api/ps"
					}
				}
			}
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
		var parent string
		_ = json.Unmarshal(m["parent"], &parent)
		out = append(out, Model{ID: id, Window: windowField(m), Parent: parent, Embedding: embeddingEntry(id, m)})
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

// ollamaShow reads Ollama's /api/show: the window — the num_ctx
// parameter (what the server really uses) when the model sets one, else
// the model's trained <arch>.context_length — and whether the model only
// embeds (capabilities without "completion").
func ollamaShow(b []byte) (window int, embedding bool) {
	var s struct {
		Parameters   string                     `json:"parameters"`
		ModelInfo    map[string]json.RawMessage `json:"model_info"`
		Capabilities []string                   `json:"capabilities"`
	}
	if json.Unmarshal(b, &s) != nil {
		return 0, false
	}
	embedding = slices.Contains(s.Capabilities, "embedding") && !slices.Contains(s.Capabilities, "completion")
	if m := numCtx().FindStringSubmatch(s.Parameters); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			return n, embedding
		}
	}
	for k, v := range s.ModelInfo {
		if strings.HasSuffix(k, ".context_length") {
			if n := positive(v); n > 0 {
				return n, embedding
			}
		}
	}
	return 0, embedding
}

// ollamaLoaded reads Ollama's /api/ps: each loaded model's context.
func ollamaLoaded(b []byte) map[string]int {
	var ps struct {
		Models []struct {
			Name          string          `json:"name"`
			Model         string          `json:"model"`
			ContextLength json.RawMessage `json:"context_length"`
		} `json:"models"`
	}
	if json.Unmarshal(b, &ps) != nil {
		return nil
	}
	out := map[string]int{}
	for _, m := range ps.Models {
		n := positive(m.ContextLength)
		if n == 0 {
			continue
		}
		for _, id := range []string{m.Name, m.Model} {
			if id != "" {
				out[id] = n
			}
		}
	}
	return out
}

// embeddingNames are the id fragments of embedding models served under
// OpenAI-compatible listings that do not say what a model is.
var embeddingNames = []string{"embed", "bge-", "e5-", "gte-", "all-minilm", "paraphrase-", "sentence-t5", "rerank"}

// embeddingEntry tells an embedding model in a /models entry: by its type
// (LM Studio "embeddings", OpenRouter's output modalities) or its id.
func embeddingEntry(id string, m map[string]json.RawMessage) bool {
	var typ string
	if json.Unmarshal(m["type"], &typ) == nil && (typ == "embeddings" || typ == "embedding") {
		return true
	}
	var arch struct {
		Output []string `json:"output_modalities"`
	}
	if json.Unmarshal(m["architecture"], &arch) == nil && len(arch.Output) > 0 {
		return slices.Contains(arch.Output, "embeddings") && !slices.Contains(arch.Output, "text")
	}
	lower := strings.ToLower(id)
	for _, frag := range embeddingNames {
		if strings.Contains(lower, frag) {
			return true
		}
	}
	return false
}

// snippet is the start of a body on one line, for a debug message.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "…"
	}
	return strconv.Quote(s)
}
