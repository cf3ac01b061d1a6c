package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"polly/agent/llmtest"
)

// catchAll is a second fake server that keeps every request it gets,
// headers and body, and answers 404.
type catchAll struct {
	mu   sync.Mutex
	seen []string // method, path, headers and body of each request
	srv  *httptest.Server
}

func newCatchAll(t *testing.T) *catchAll {
	r := &catchAll{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var b strings.Builder
		b.WriteString(req.Method + " " + req.URL.String() + "\n")
		req.Header.Write(&b)
		b.Write(body)
		r.mu.Lock()
		r.seen = append(r.seen, b.String())
		r.mu.Unlock()
		http.Error(w, `{"error":{"message":"not here"}}`, http.StatusNotFound)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *catchAll) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.seen, "\n---\n")
}

func (r *catchAll) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// Must show (issue 25 #6): OPENAI_BASE_URL with another provider active.
// The provider's key goes to its own base URL only; the host in
// OPENAI_BASE_URL never receives it (nor any chat request), and Polly
// warns once.
func TestOpenAIBaseURLNeverGetsAnotherProvidersKey(t *testing.T) {
	const orKey = "sk-or-v1-THEOPENROUTERKEY0123456789"
	provider := llmtest.NewServer(t, llmtest.Text("hello from openrouter"))
	elsewhere := newCatchAll(t)
	env, polly := cliEnv(t, "", map[string]string{
		"OPENAI_BASE_URL":    elsewhere.srv.URL + "/v1",
		"OPENROUTER_API_KEY": orKey,
	})
	cfgDir := filepath.Join(env.Home, ".config", "polly")
	os.MkdirAll(cfgDir, 0o755)
	os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(`{"provider": "openrouter", "model": "llmtest-model",
  "providers": {"openrouter": {"base_url": "`+provider.URL()+`", "api_key_env": "OPENROUTER_API_KEY"}}}`), 0o644)

	r := polly("-p", "hello")
	if r.code != 0 || !strings.Contains(r.stdout, "hello from openrouter") {
		t.Fatalf("run: code=%d stdout=%s stderr=%s", r.code, r.stdout, r.stderr)
	}
	if got := provider.Last().Header.Get("Authorization"); got != "Bearer "+orKey {
		t.Fatalf("the provider got Authorization %q", got)
	}
	seen := elsewhere.all()
	for _, form := range keyForms(orKey) {
		if strings.Contains(seen, form) {
			t.Fatalf("the OPENAI_BASE_URL host received the openrouter key (%q):\n%s", form, seen)
		}
	}
	if strings.Contains(seen, "/chat/completions") {
		t.Fatalf("a chat request went to the OPENAI_BASE_URL host:\n%s", seen)
	}
	if n := strings.Count(r.stderr, "OPENAI_BASE_URL is set, but the active provider is \"openrouter\""); n != 1 {
		t.Fatalf("warned %d times, want once: %s", n, r.stderr)
	}
	t.Logf("OPENAI_BASE_URL host got %d request(s), none with the key", elsewhere.count())
}

// keyForms are the ways a key can be read back from bytes.
func keyForms(key string) []string {
	r := []rune(key)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return []string{key, string(r), base64.StdEncoding.EncodeToString([]byte(key)), base64.RawStdEncoding.EncodeToString([]byte(key)),
		base64.URLEncoding.EncodeToString([]byte(key)), hex.EncodeToString([]byte(key)), strings.ToUpper(hex.EncodeToString([]byte(key)))}
}

// Must show (issue 25 #6): a 401 whose body echoes the key (plain, in a
// Bearer header, reversed, base64). No form of the key reaches the SQLite
// files (raw bytes), stderr, the debug logs or any later request body.
func TestEchoedKeyIsRedactedEverywhere(t *testing.T) {
	const key = "sk-proj-Kx9mZ2vQ7rT4wY8pL3nB"
	forms := keyForms(key)
	echo := "Incorrect API key provided: " + key + ". You sent Authorization: Bearer " + key +
		" (reversed " + forms[1] + ", base64 " + forms[2] + ")"
	srv := llmtest.NewServer(t, llmtest.Fail{Status: 401, Code: "invalid_api_key", Message: echo})
	env, polly := cliEnv(t, srv.URL(), map[string]string{"OPENAI_API_KEY": key})

	r := polly("-p", "remember the code word heron", "--debug")
	if r.code != 1 || !strings.Contains(r.stderr, "Incorrect API key provided") {
		t.Fatalf("401 run: code=%d stderr=%s", r.code, r.stderr)
	}
	srv.Push(llmtest.Text("It was heron."))
	r2 := polly("-p", "what was the code word?", "--continue", "--debug")
	if r2.code != 0 {
		t.Fatalf("later run: code=%d stderr=%s", r2.code, r2.stderr)
	}
	if !strings.Contains(string(srv.Last().Raw), "heron") {
		t.Fatal("the later request did not carry the earlier conversation")
	}

	check := func(what string, data []byte) {
		t.Helper()
		for _, f := range forms {
			if bytes.Contains(data, []byte(f)) {
				t.Errorf("%s holds the key as %q", what, f)
			}
		}
	}
	check("stderr", []byte(r.stderr+r2.stderr))
	check("stdout", []byte(r.stdout+r2.stdout))
	entries, _ := os.ReadDir(filepath.Join(env.Dir, ".agent"))
	scanned := 0
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(env.Dir, ".agent", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		check(".agent/"+e.Name(), data)
		scanned++
	}
	if scanned < 2 {
		t.Fatalf("scanned only %d files in .agent/", scanned)
	}
	for i, req := range srv.Requests() {
		check("request body "+string(rune('1'+i)), req.Raw)
	}
	// The stored error still says what happened.
	db := readAllText(t, filepath.Join(env.Dir, ".agent", "polly.db"))
	if !strings.Contains(db, "Incorrect API key provided") || !strings.Contains(db, "[REDACTED API KEY]") {
		t.Fatal("llm_calls.error does not keep the redacted message")
	}
}

// readAllText reads the store and its WAL as one text.
func readAllText(t *testing.T, path string) string {
	t.Helper()
	var b []byte
	for _, p := range []string{path, path + "-wal"} {
		data, _ := os.ReadFile(p)
		b = append(b, data...)
	}
	return string(b)
}
