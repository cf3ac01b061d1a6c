package hooks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

// answer is one finished hook: its run record and what it printed.
type answer struct {
	run    Run
	stdout string
	stderr string
	exited bool // it ended on its own (an exit code or an HTTP answer), not by timeout or cancel
}

// run starts one hook and waits for it.
func (s *Set) run(ctx context.Context, h compiled, body []byte, timeout time.Duration) answer {
	if h.Type == "http" {
		return s.post(ctx, h, body, timeout)
	}
	return s.command(ctx, h, body, timeout)
}

// command runs a command hook, killing it and what it started at the
// timeout or when ctx ends.
func (s *Set) command(ctx context.Context, h compiled, body []byte, timeout time.Duration) answer {
	a := answer{run: Run{Event: h.Event, Command: h.display(), ExitCode: -1, Status: h.StatusMessage}}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr capped
	start := time.Now()
	code, err := s.opts.Run(tctx, h.Hook, s.opts.Dir, s.opts.Env, body, &stdout, &stderr)
	a.run.Duration = time.Since(start)
	a.stdout, a.stderr = stdout.String(), stderr.String()
	switch {
	case tctx.Err() != nil && ctx.Err() == nil:
		a.run.Outcome, a.run.Message = "timeout", fmt.Sprintf("killed after its timeout of %s; its output is discarded", timeout)
	case ctx.Err() != nil:
		a.run.Outcome, a.run.Message = "warning", "cancelled"
	case err == nil:
		a.run.ExitCode, a.exited = code, true
	default:
		a.run.Outcome, a.run.Message = "warning", "could not run: "+err.Error()
	}
	return a
}

// post sends the event to an http hook. Only a 2xx answer with an empty
// or JSON body counts; anything else is a warning and the action goes on.
func (s *Set) post(ctx context.Context, h compiled, body []byte, timeout time.Duration) answer {
	a := answer{run: Run{Event: h.Event, Command: h.URL, ExitCode: -1, Status: h.StatusMessage}}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(tctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		a.run.Outcome, a.run.Message = "warning", "bad URL: "+err.Error()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h.Headers {
		req.Header.Set(k, s.interpolate(v, h.AllowedEnvVars))
	}
	start := time.Now()
	resp, err := s.opts.HTTP.Do(req)
	defer func() { a.run.Duration = time.Since(start) }()
	switch {
	case err != nil && tctx.Err() != nil && ctx.Err() == nil:
		a.run.Outcome, a.run.Message = "timeout", fmt.Sprintf("no answer within its timeout of %s", timeout)
		return a
	case err != nil && ctx.Err() != nil:
		a.run.Outcome, a.run.Message = "warning", "cancelled"
		return a
	case err != nil:
		a.run.Outcome, a.run.Message = "warning", "request failed: "+err.Error()
		return a
	}
	defer resp.Body.Close()
	var out capped
	if _, err := io.Copy(&out, resp.Body); err != nil && tctx.Err() != nil {
		a.run.Outcome, a.run.Message = "timeout", fmt.Sprintf("no answer within its timeout of %s", timeout)
		return a
	}
	a.run.ExitCode = resp.StatusCode
	text := strings.TrimSpace(out.String())
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		a.run.Outcome, a.run.Message = "warning", fmt.Sprintf("HTTP %s: %s", resp.Status, clip(firstLine(text), 300))
	case text != "" && !strings.HasPrefix(text, "{"):
		a.run.Outcome, a.run.Message = "warning", "the answer is not a JSON object: "+clip(firstLine(text), 300)
	default:
		// A 2xx answer reads like exit 0 with the body as stdout.
		a.stdout, a.exited = text, true
		a.run.ExitCode = 0
	}
	return a
}

// interpolate expands $VAR and ${VAR} in a header value, with only the
// variables the hook lists; the others become empty (Claude Code's rule).
func (s *Set) interpolate(v string, allowed []string) string {
	return os.Expand(v, func(name string) string {
		if !slices.Contains(allowed, name) {
			return ""
		}
		for _, kv := range slices.Backward(s.opts.Env) {
			if k, val, ok := strings.Cut(kv, "="); ok && k == name {
				return val
			}
		}
		return ""
	})
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// capped keeps the first maxOutput bytes written to it and drains the rest.
type capped struct {
	bytes.Buffer
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	room := maxOutput - c.Len()
	if room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	c.dropped += len(p) - max(0, min(len(p), room))
	return len(p), nil
}
