package redact

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"polly/agent/llm"
)

const key = "sk-live/Zq8+r7Tw_9xYk2=pQ"

func reversed(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// Every form a key takes in an echoed request is hidden, including base64
// of a longer value holding the key at any offset.
func TestStringHidesEveryForm(t *testing.T) {
	r := New(key, "short")
	texts := []string{
		"plain " + key + " end",
		"rev " + reversed(key),
		"hex " + hex.EncodeToString([]byte(key)) + " HEX " + strings.ToUpper(hex.EncodeToString([]byte(key))),
		"url " + url.QueryEscape(key) + " " + url.PathEscape(key),
		`json "` + strings.ReplaceAll(key, "/", `\/`) + `"`,
	}
	for _, prefix := range []string{"", "u", "us", "user:", "ab:cd"} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
			texts = append(texts, "Basic "+enc.EncodeToString([]byte(prefix+key+"!tail")))
		}
	}
	for _, text := range texts {
		got := r.String(text)
		if leaks(got) {
			t.Errorf("String(%q) = %q: still holds the key", text, got)
		}
	}
	if got := r.String("a short word and nothing else"); got != "a short word and nothing else" {
		t.Fatalf("changed text without a key: %q", got)
	}
	var nilR *Redactor
	if nilR.String(key) != key {
		t.Fatal("a nil redactor changed text")
	}
}

// leaks reports whether s still holds the key in a form a reader could
// decode: plain, reversed, or 6+ consecutive key bytes inside a base64 or
// hex run.
func leaks(s string) bool {
	if strings.Contains(s, key) || strings.Contains(s, reversed(key)) {
		return true
	}
	for _, field := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '"' }) {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			for skip := range 4 {
				if skip >= len(field) {
					break
				}
				f := field[skip:]
				f = f[:len(f)/4*4]
				if b, err := enc.DecodeString(strings.TrimRight(f, "=")); err == nil && holdsRun(string(b)) {
					return true
				}
				if b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(f, "=")); err == nil && holdsRun(string(b)) {
					return true
				}
			}
		}
		if b, err := hex.DecodeString(field); err == nil && holdsRun(string(b)) {
			return true
		}
	}
	return false
}

func holdsRun(s string) bool {
	for i := 0; i+6 <= len(key); i++ {
		if strings.Contains(s, key[i:i+6]) {
			return true
		}
	}
	return false
}

// Provider errors lose every credential they echo, configured or not.
func TestProviderHidesEchoedCredentials(t *testing.T) {
	r := New(key)
	body := `{"error":{"message":"Invalid key. Request headers: Authorization: Bearer sk-other-provider-0123456789abcdef, x-api-key: zzzzzzzzzzzz, token abcdefgh12345678","type":"auth"}}`
	got := r.Provider(body)
	for _, secret := range []string{"sk-other-provider-0123456789abcdef", "zzzzzzzzzzzz", "abcdefgh12345678"} {
		if strings.Contains(got, secret) {
			t.Errorf("Provider kept %q: %s", secret, got)
		}
	}
	if !strings.Contains(got, "Invalid key") {
		t.Fatalf("Provider lost the message: %s", got)
	}
}

// Error keeps what callers branch on: the *llm.Error kind and status,
// context.Canceled; and returns err unchanged when nothing is hidden.
func TestErrorKeepsClassification(t *testing.T) {
	r := New(key)
	le := &llm.Error{Kind: llm.KindAuth, Status: 401, Message: "bad key " + key, Err: fmt.Errorf("read: %w (%s)", context.Canceled, key)}
	got := r.Error(fmt.Errorf("call: %w", le))
	if strings.Contains(got.Error(), key) {
		t.Fatalf("text leaks: %v", got)
	}
	var out *llm.Error
	if !errors.As(got, &out) || out.Kind != llm.KindAuth || out.Status != 401 || strings.Contains(out.Message, key) || strings.Contains(out.Err.Error(), key) {
		t.Fatalf("llm.Error copy: %+v", out)
	}
	if llm.KindOf(got) != llm.KindAuth || !errors.Is(got, context.Canceled) {
		t.Fatalf("classification lost: kind=%v canceled=%v", llm.KindOf(got), errors.Is(got, context.Canceled))
	}
	if le.Message != "bad key "+key {
		t.Fatal("the original error was changed")
	}
	plain := errors.New("nothing secret here")
	if r.Error(plain) != plain || r.Error(nil) != nil {
		t.Fatal("an error without secrets was replaced")
	}
}

// Ordinary words after "token", "Basic" or an error code are not hidden
// (a field such as "Authorization: …" is, whatever its value).
func TestProviderKeepsWords(t *testing.T) {
	r := New(key)
	for _, s := range []string{
		"auth (HTTP 401) invalid_api_key: Incorrect API key provided",
		"the token limit was exceeded; basic authentication failed",
	} {
		if got := r.Provider(s); got != s {
			t.Errorf("Provider(%q) = %q", s, got)
		}
	}
}

// The one-pass search hides exactly what a plain replacement of every
// form would: random text with forms planted at every offset.
func TestStringMatchesPlainReplacement(t *testing.T) {
	keys := []string{key, "gsk_ABCDEFGHIJKLMNOPQRSTUV0123", "short-k1"}
	r := New(keys...)
	var pairs []string
	for _, f := range r.forms {
		pairs = append(pairs, f, Mask)
	}
	plain := strings.NewReplacer(pairs...)
	rnd := rand.New(rand.NewPCG(1, 2))
	alphabet := "abcdefghijklmnopqrstuvwxyz0123456789+/=_- \n"
	for n := range 3000 {
		var b strings.Builder
		for b.Len() < 200+n%97 {
			if rnd.IntN(6) == 0 {
				f := r.forms[rnd.IntN(len(r.forms))]
				if rnd.IntN(3) == 0 { // a part of a form: must not match
					f = f[:len(f)-1]
				}
				b.WriteString(f)
				continue
			}
			b.WriteByte(alphabet[rnd.IntN(len(alphabet))])
		}
		text := b.String()
		if got, want := r.String(text), plain.Replace(text); got != want {
			t.Fatalf("text %q\n got %q\nwant %q", text, got, want)
		}
	}
}
