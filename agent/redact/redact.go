// Package redact hides API keys from what Polly stores, logs, prints or
// sends to a model. A provider's error body can echo the request's
// Authorization header, a tool can print a .env file: the configured keys
// are replaced wherever they appear, also base64- (at any alignment),
// hex-, URL- or JSON-encoded and reversed, and in provider errors every
// Bearer/Basic credential and api-key field is replaced whatever its value.
package redact

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"polly/agent/llm"
)

// Mask is what a hidden key becomes.
const Mask = "[REDACTED API KEY]"

// MinKey is the shortest value treated as a key: shorter ones would hide
// ordinary words.
const MinKey = 8

// Redactor replaces the keys it was built from. The zero value and nil
// redact nothing. It is safe for concurrent use.
type Redactor struct {
	forms []string // every form of every key, longest first
	// One pass over the text finds them all, looking at every fourth
	// position only: every form is at least MinKey (8) bytes long, so an
	// occurrence covers the four bytes at some position p ≡ 0 (mod 4),
	// at an offset 0–3 from its start. A bit per hash of each form's
	// four-byte windows at those offsets rules out almost every p for the
	// price of a load; where it is set, the forms with that window are
	// compared. (strings.Replacer over ~25 forms a key ran at ~100 MB/s.)
	window [1 << 16 / 64]uint64
	byHash map[uint16][]head
}

// head is a form indexed by its four-byte window at off.
type head struct {
	form string
	off  int
}

// New builds a redactor for keys; empty and short ones are skipped.
func New(keys ...string) *Redactor {
	seen := map[string]bool{}
	var forms []string
	for _, k := range keys {
		if len(k) < MinKey {
			continue
		}
		for _, f := range Forms(k) {
			if len(f) >= MinKey && !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	// Longest first, so a form inside another is not replaced half-way.
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	r := &Redactor{forms: forms, byHash: map[uint16][]head{}}
	for _, f := range forms {
		for off := range 4 {
			h := hashAt(f, off)
			r.window[h/64] |= 1 << (h % 64)
			r.byHash[h] = append(r.byHash[h], head{f, off})
		}
	}
	return r
}

// hashAt hashes the four bytes of s at i to 16 bits.
func hashAt(s string, i int) uint16 {
	v := uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
	return uint16((v * 2654435761) >> 16)
}

// Forms lists how key may appear in text: as is, reversed, hex (both
// cases), URL- and JSON-escaped, and base64 (standard and URL alphabets,
// padded or not) — for base64 also the part that is the same wherever
// the key sits in a longer encoded value, such as "Basic base64(user:key)".
func Forms(key string) []string {
	b := []byte(key)
	r := []rune(key)
	slices.Reverse(r)
	forms := []string{key, string(r), hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
		url.QueryEscape(key), url.PathEscape(key)}
	if j, err := json.Marshal(key); err == nil {
		forms = append(forms, string(j[1:len(j)-1]))
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		forms = append(forms, enc.EncodeToString(b))
	}
	// Embedded at offset o (mod 3) in a longer value: the first group that
	// holds bytes before the key and the last partial group change with
	// the neighbours; the groups in between do not.
	for o := range 3 {
		padded := append(make([]byte, o), b...)
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			s := enc.EncodeToString(padded)
			start := 0
			if o > 0 {
				start = 4
			}
			end := len(padded) / 3 * 4 // whole groups only
			if end > start {
				forms = append(forms, s[start:end])
			}
		}
	}
	return forms
}

// String hides every form of every key in s (leftmost first, the
// longest form where several start at one place).
func (r *Redactor) String(s string) string {
	if r == nil || len(r.forms) == 0 {
		return s
	}
	var b strings.Builder
	done := 0 // s[:done] is written to b (or unchanged, while b is empty)
	for p := 0; p+4 <= len(s); p += 4 {
		h := hashAt(s, p)
		if r.window[h/64]&(1<<(h%64)) == 0 {
			continue
		}
		at, form := -1, ""
		for _, c := range r.byHash[h] {
			i := p - c.off
			if i < done || at >= 0 && i > at || i == at && len(c.form) <= len(form) {
				continue
			}
			if strings.HasPrefix(s[i:], c.form) {
				at, form = i, c.form
			}
		}
		if at < 0 {
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[done:at])
		b.WriteString(Mask)
		done = at + len(form)
		p = done/4*4 - 4 // on from the window that holds done
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// credentials match what providers echo of a request's credentials,
// whatever the value: "Bearer sk-…", "Basic dXNlcjpr…", api_key=…,
// "x-api-key": "…". Group 3 is the value; opaqueValue decides.
var credentials = regexp.MustCompile(`(?i)\b(bearer|basic|token|(?:x-)?api[-_]?key|authorization|access[-_]?token)\b(["']?\s*[:=]?\s*["']?)([A-Za-z0-9._~+/=-]{8,})`)

// openAIKey matches OpenAI-style keys (sk-…, sk-proj-…) of any provider.
var openAIKey = regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`)

// opaqueValue tells a credential from an English word after "token" or
// "Basic" without a ":" or "=": it holds a digit, or is too long for a
// word.
func opaqueValue(v string) bool {
	return len(v) >= 20 || strings.ContainsAny(v, "0123456789")
}

// Provider hides what String hides and every credential a provider's
// error may echo (see credentials), for error bodies and headers.
func (r *Redactor) Provider(s string) string {
	s = r.String(s)
	s = credentials.ReplaceAllStringFunc(s, func(m string) string {
		g := credentials.FindStringSubmatch(m)
		field := strings.ContainsAny(g[2], ":=") // "api_key: v", "Authorization=v": a value, whatever it looks like
		if !field && !opaqueValue(g[3]) {
			return m
		}
		return g[1] + g[2] + Mask
	})
	return openAIKey.ReplaceAllString(s, Mask)
}

// Error returns err with its text passed through Provider. When nothing
// needed hiding, err itself is returned. Otherwise the result keeps what
// callers branch on: an *llm.Error in it is a copy with its message,
// partial text and cause redacted (errors.As finds the copy), and
// errors.Is still sees context.Canceled and other sentinels of the cause.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := r.Provider(err.Error())
	if msg == err.Error() {
		return err
	}
	out := &hidden{msg: msg, orig: err}
	var le *llm.Error
	if errors.As(err, &le) {
		out.inner = r.LLMError(le)
	}
	return out
}

// LLMError returns a copy of e with its message, partial text and cause
// redacted (nil for nil).
func (r *Redactor) LLMError(e *llm.Error) *llm.Error {
	if e == nil {
		return nil
	}
	c := *e
	c.Message, c.Partial = r.Provider(e.Message), r.Provider(e.Partial)
	if e.Err != nil {
		if msg := r.Provider(e.Err.Error()); msg != e.Err.Error() {
			c.Err = &hidden{msg: msg, orig: e.Err}
		}
	}
	return &c
}

// hidden is an error whose text was redacted. Its original is consulted
// only for errors.Is (sentinel identity, never text).
type hidden struct {
	msg   string
	inner error // the redacted *llm.Error copy, or nil
	orig  error
}

func (e *hidden) Error() string { return e.msg }
func (e *hidden) Unwrap() error { return e.inner }
func (e *hidden) Is(target error) bool {
	switch target {
	case context.Canceled, context.DeadlineExceeded:
		return errors.Is(e.orig, target)
	}
	return false
}

// Streamer redacts the errors of an llm.Streamer (returned and retried),
// at the boundary where they leave the provider client: everything that
// stores, logs, prints or shows them gets the redacted text.
type Streamer struct {
	Inner    llm.Streamer
	Redactor *Redactor
}

// Stream implements llm.Streamer.
func (s Streamer) Stream(ctx context.Context, req llm.Request, obs llm.Observer) (llm.Response, error) {
	if retry := obs.OnRetry; retry != nil {
		obs.OnRetry = func(rt llm.Retry) {
			rt.Err = s.Redactor.LLMError(rt.Err)
			retry(rt)
		}
	}
	resp, err := s.Inner.Stream(ctx, req, obs)
	return resp, s.Redactor.Error(err)
}
