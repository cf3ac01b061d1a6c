package llmtest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestStartServes checks that a standalone server answers like NewServer's
// and that Close stops it.
func TestStartServes(t *testing.T) {
	s, err := Start("", Text("hello"))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`
	resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"content":"hello"`) || !strings.Contains(string(b), "[DONE]") {
		t.Fatalf("unexpected stream: %s", b)
	}
	if r, err := http.Get(s.URL() + "/models"); err != nil || r.StatusCode != 200 {
		t.Fatalf("models: %v %v", r, err)
	}
	s.Close()
	if _, err := http.Get(s.URL() + "/models"); err == nil {
		t.Fatal("server still answers after Close")
	}
}
