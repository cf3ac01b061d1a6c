package agent

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"polly/agent/llm"
	"polly/agent/llmtest"
)

// Must show (issue 8 #3): every provider fault through the real loop: a
// clear error or a retry, never a hang or a panic.
func TestProviderFaultsThroughTheLoop(t *testing.T) {
	html := llmtest.Fail{Status: 502, ContentType: "text/html", Body: "<html><body><h1>502 Bad Gateway</h1>nginx</body></html>"}
	cases := []struct {
		name     string
		steps    []llmtest.Step
		wantKind llm.Kind // KindUnknown: the run succeeds
		retries  int      // Retrying events expected (at least)
		inError  string
	}{
		{"429 storm then success", []llmtest.Step{llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Fail{Status: 429}, llmtest.Text("ok")}, llm.KindUnknown, 3, ""},
		{"429 storm that never ends", []llmtest.Step{llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Fail{Status: 429, RetryAfter: "0"}, llmtest.Fail{Status: 429, RetryAfter: "0"}}, llm.KindRateLimit, 4, "rate"},
		{"500 then success", []llmtest.Step{llmtest.Fail{Status: 500}, llmtest.Fail{Status: 503}, llmtest.Text("ok")}, llm.KindUnknown, 2, ""},
		{"stream stalls once", []llmtest.Step{llmtest.Stall{AfterText: "thinking about", For: 0}, llmtest.Text("ok")}, llm.KindUnknown, 1, ""},
		{"stream stalls twice", []llmtest.Step{llmtest.Stall{AfterText: "thinking about", For: 0}, llmtest.Stall{AfterText: "again", For: 0}}, llm.KindStream, 1, "stalled"},
		{"connection dropped mid-stream once", []llmtest.Step{llmtest.Drop{AfterText: "half an ans"}, llmtest.Text("ok")}, llm.KindUnknown, 1, ""},
		{"connection dropped mid-stream twice", []llmtest.Step{llmtest.Drop{AfterText: "half an ans"}, llmtest.Drop{AfterText: "half"}}, llm.KindStream, 1, ""},
		{"malformed SSE twice", []llmtest.Step{llmtest.MalformedSSE{AfterText: "hel"}, llmtest.MalformedSSE{AfterText: "hel"}}, llm.KindStream, 1, ""},
		{"HTML error page", []llmtest.Step{html, html, html, html, html}, llm.KindServer, 4, "502"},
		{"error event inside the stream twice", []llmtest.Step{llmtest.StreamError{AfterText: "par", Code: "server_error", Message: "upstream overloaded"}, llmtest.StreamError{Message: "upstream overloaded"}}, llm.KindStream, 1, "upstream overloaded"},
		{"auth", []llmtest.Step{llmtest.Fail{Status: 401}}, llm.KindAuth, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.steps...)
			h.deps.LLM = llm.New(llm.Config{BaseURL: h.srv.URL(), APIKey: "k", InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
			start := time.Now()
			out, err := h.send(context.Background(), "hi")
			took := time.Since(start)
			retries := len(eventsOf[Retrying](h))
			if c.wantKind == llm.KindUnknown {
				if err != nil || out.Final != "ok" {
					t.Fatalf("want success, got %+v %v", out, err)
				}
			} else {
				if llm.KindOf(err) != c.wantKind {
					t.Fatalf("err = %v (kind %v), want %v", err, llm.KindOf(err), c.wantKind)
				}
				ev := eventsOf[ErrorEvent](h)
				if len(ev) != 1 || ev[0].Hint == "" || !strings.Contains(strings.ToLower(ev[0].Message), strings.ToLower(c.inError)) {
					t.Fatalf("error events = %+v", ev)
				}
			}
			if retries < c.retries {
				t.Fatalf("%d retry events, want ≥ %d", retries, c.retries)
			}
			if took > 5*time.Second {
				t.Fatalf("took %v", took)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			t.Logf("outcome: reason=%s retries=%d took=%v err=%q", out.Reason, retries, took.Round(time.Millisecond), msg)
		})
	}
}

// The user sees the wait: a Retry-After is reported with its duration.
func TestRetryAfterIsShown(t *testing.T) {
	h := newHarness(t, llmtest.Fail{Status: 429, RetryAfter: "1"}, llmtest.Text("ok"))
	if _, err := h.send(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	r := eventsOf[Retrying](h)
	if len(r) != 1 || r[0].Wait < 900*time.Millisecond || !strings.Contains(r[0].Reason, "rate_limit") {
		t.Fatalf("retry events = %+v", r)
	}
}

// Must show (issue 8 #4): a command printing 100 MB through the loop: the
// peak memory of the process stays within 100 MB of its baseline; the
// output is capped, stored and offloaded.
func TestHundredMegabyteCommandStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("prints 100 MB")
	}
	h := newHarness(t,
		llmtest.Call("run_command", `{"command":"yes 'all work and no play makes jack a dull boy' | head -c 100000000; echo; echo END-OF-OUTPUT"}`),
		llmtest.Text("done"),
	)
	if err := resetPeakRSS(); err != nil {
		t.Skipf("cannot reset the peak RSS here: %v", err)
	}
	base := rssKB(t, "VmRSS")
	if _, err := h.send(context.Background(), "print a lot"); err != nil {
		t.Fatal(err)
	}
	peak := rssKB(t, "VmHWM")
	grew := (peak - base) / 1024
	t.Logf("baseline RSS %d MB, peak %d MB: +%d MB for a 100 MB command output", base/1024, peak/1024, grew)
	if grew > 100 && !raceEnabled {
		t.Fatalf("peak memory grew %d MB", grew)
	}
	off := eventsOf[OutputOffloaded](h)
	if len(off) != 1 || off[0].Chars > 5<<20 {
		t.Fatalf("offloaded = %+v", off)
	}
	full, _ := h.store.Output(context.Background(), off[0].ExecID)
	if !strings.Contains(full, "bytes omitted") || !strings.HasSuffix(strings.TrimSpace(full), "END-OF-OUTPUT") {
		t.Fatalf("stored output: %d chars, tail %q", len(full), full[max(0, len(full)-80):])
	}
}

// resetPeakRSS makes VmHWM start again from the current RSS (Linux ≥ 4.0).
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func rssKB(t *testing.T, field string) int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// Secrets: the API key never reaches SQLite, archives, checkpoints, logs or
// the model — even when a command prints the environment or a file holds it.
func TestAPIKeyNeverStoredOrShown(t *testing.T) {
	const key = "sk-SECRET-0123456789abcdef"
	t.Setenv("OPENAI_API_KEY", key)
	h := newHarness(t,
		llmtest.Call("run_command", `{"command":"env | grep -c OPENAI_API_KEY; cat .env"}`),
		llmtest.Text("done"),
	)
	h.deps.Secrets = []string{key}
	h.deps.Tools.Add(shellWithScrub(h.dir))
	os.WriteFile(filepath.Join(h.dir, ".env"), []byte("OPENAI_API_KEY="+key+"\n"), 0o600)
	if _, err := h.send(context.Background(), "show the env"); err != nil {
		t.Fatal(err)
	}
	for _, r := range h.srv.Requests() {
		if strings.Contains(string(r.Raw), key) {
			t.Fatal("the key was sent to the model")
		}
	}
	got := h.srv.Last().LastTurn().Content
	if !strings.Contains(got, "0\n") || !strings.Contains(got, "[REDACTED API KEY]") {
		t.Fatalf("tool result = %q", got)
	}
	h.store.Close()
	err := filepath.Walk(h.dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || filepath.Base(p) == ".env" {
			return err
		}
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), key) {
			return errors.New("the key is in " + p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
