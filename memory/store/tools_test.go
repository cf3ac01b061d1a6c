package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestToolOutputs(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)
	other := mustSession(t, s)

	// ~1 MB with multi-byte runes everywhere and one rare word deep inside.
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		if i == 25000 {
			b.WriteString("panic: zanzibarification failed in módulo ✗\n")
		}
		b.WriteString("línea ok — compiling ✓ ")
		b.WriteString(strings.Repeat("é", i%7))
		b.WriteString("\n")
	}
	out := b.String()
	runes := []rune(out)
	deep := strings.Index(out, "zanzibar")
	if deep < len(out)/2 {
		t.Fatalf("test word not deep enough: byte %d of %d", deep, len(out))
	}
	exit := 2
	id, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Persona: "coder", CallID: "call_9",
		Tool: "bash", Arguments: `{"command":"make"}`, Output: out, Preview: "línea ok…",
		Status: ExecError, ExitCode: &exit, Duration: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	e, err := s.ToolExecution(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if e.Output != out || e.OutputChars != len(runes) || e.OutputLines != strings.Count(out, "\n") ||
		e.ExitCode == nil || *e.ExitCode != 2 || e.Duration != 1500*time.Millisecond || e.Status != ExecError ||
		e.Preview != "línea ok…" || e.CallID != "call_9" || e.Persona != "coder" {
		t.Errorf("round trip: %d chars %d lines exit %v dur %v status %q preview %q (output equal: %v)",
			e.OutputChars, e.OutputLines, e.ExitCode, e.Duration, e.Status, e.Preview, e.Output == out)
	}

	for _, c := range []struct{ off, limit int }{
		{0, 10}, {0, 4096}, {5, chunkChars}, {chunkChars - 3, 7}, {3 * chunkChars, 2 * chunkChars},
		{len(runes) / 2, 4096}, {len(runes) - 5, 100}, {len(runes), 10}, {len(runes) + 50, 10}, {100, 1 << 62},
	} {
		got, total, err := s.OutputSlice(ctx, id, c.off, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		want := ""
		if c.off < len(runes) {
			want = string(runes[c.off:min(len(runes), c.off+c.limit)])
		}
		if got != want || total != len(runes) {
			t.Errorf("slice [%d:+%d]: %d runes (want %d), total %d (want %d)",
				c.off, c.limit, utf8.RuneCountInString(got), utf8.RuneCountInString(want), total, len(runes))
		}
	}
	if _, _, err := s.OutputSlice(ctx, id, -1, 10); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative offset: %v, want ErrInvalid", err)
	}

	// The search finds the deep word (stemmed: "zanzibarification" is
	// indexed, the query word matches exactly), points at it and marks it.
	hits, err := s.SearchOutputs(ctx, sess.ID, "zanzibarification módulo", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].ExecID != id || hits[0].Tool != "bash" {
		t.Fatalf("hits %+v", hits)
	}
	h := hits[0]
	if !strings.Contains(h.Snippet, HitStart+"zanzibarification"+HitEnd) || !strings.Contains(h.Snippet, "panic:") {
		t.Errorf("snippet %q", h.Snippet)
	}
	part, _, err := s.OutputSlice(ctx, id, h.Offset, chunkChars)
	if err != nil || !strings.Contains(part, "zanzibarification") {
		t.Errorf("slice at hit offset %d does not hold the match (%v)", h.Offset, err)
	}
	// Porter stemming: "compile" finds "compiling".
	if hits, err := s.SearchOutputs(ctx, "", "compile", 5); err != nil || len(hits) != 1 {
		t.Errorf("stemmed search: %d hits, %v", len(hits), err)
	}
	// Scoped to another session: nothing.
	if hits, err := s.SearchOutputs(ctx, other.ID, "zanzibarification", 5); err != nil || len(hits) != 0 {
		t.Errorf("other session: %d hits, %v", len(hits), err)
	}
	// Punctuation is literal, not FTS syntax.
	if _, err := s.SearchOutputs(ctx, "", `"unbalanced AND (`, 5); err != nil {
		t.Errorf("query with FTS syntax characters: %v", err)
	}

	for name, f := range map[string]func() error{
		"ToolExecution": func() error { _, err := s.ToolExecution(ctx, 424242); return err },
		"Output":        func() error { _, err := s.Output(ctx, 424242); return err },
		"OutputSlice":   func() error { _, _, err := s.OutputSlice(ctx, 424242, 0, 10); return err },
	} {
		if err := f(); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s(unknown id): %v, want ErrNotFound", name, err)
		}
	}
}

func TestSearchManyMatchesStaysFast(t *testing.T) {
	// FTS5 snippet() is quadratic in the matches of a document; a 1 MB log
	// of repeated "error" lines took seconds with it.
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)
	if _, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Tool: "bash",
		Output: strings.Repeat("error error error\n", 60000), Status: ExecError}); err != nil {
		t.Fatal(err)
	}
	if err := s.IndexOutputs(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	hits, err := s.SearchOutputs(ctx, "", "error", 5)
	if err != nil || len(hits) != 1 || !strings.Contains(hits[0].Snippet, HitStart+"error"+HitEnd) {
		t.Fatalf("hits %+v, %v", hits, err)
	}
	// Generous bound (race detector, busy CI): snippet() over the whole
	// output took minutes under the race detector.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("search took %v", d)
	}
}

func TestOutputCleaningAndEdgeCases(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)
	// Invalid UTF-8 and NUL become U+FFFD, so counts agree with what is read back.
	id, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Tool: "cat", Output: "a\xffb\x00c", Status: ExecOK})
	if err != nil {
		t.Fatal(err)
	}
	got, total, err := s.OutputSlice(ctx, id, 0, 100)
	if err != nil || got != "a\uFFFDb\uFFFDc" || total != 5 {
		t.Errorf("cleaned output %q total %d (%v)", got, total, err)
	}
	// Empty output: exists, reads as "".
	id, err = s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Tool: "true", Status: ExecOK})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := s.Output(ctx, id); err != nil || out != "" {
		t.Errorf("empty output %q, %v", out, err)
	}
	if got, total, err := s.OutputSlice(ctx, id, 0, 10); err != nil || got != "" || total != 0 {
		t.Errorf("empty slice %q %d %v", got, total, err)
	}
	// Unknown status and unknown session are refused.
	if _, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Tool: "x", Status: "weird"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad status: %v, want ErrInvalid", err)
	}
	if _, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: "nope", Tool: "x", Status: ExecOK}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown session: %v, want ErrNotFound", err)
	}
	// Outputs are immutable (the index depends on it).
	if _, err := s.w.Exec(`UPDATE output_chunks SET text = 'x'`); err == nil {
		t.Error("output chunk was updated")
	}

	list, err := s.ListToolExecutions(ctx, sess.ID, 3, 0)
	if err != nil || len(list) != 1 || list[0].Tool != "cat" || list[0].OutputChars != 5 || list[0].Output != "" {
		t.Errorf("list with minChars 3: %+v, %v", list, err)
	}
}

func TestSplitOutput(t *testing.T) {
	words := strings.Repeat("alpha béta gamma\n", 5000)
	long := strings.Repeat("x", 3*chunkChars+5) // no whitespace: hard cuts
	for _, in := range []string{"", "short", words, long, words + long + words} {
		chunks, chars := splitOutput(in)
		if chars != utf8.RuneCountInString(in) {
			t.Fatalf("chars %d, want %d", chars, utf8.RuneCountInString(in))
		}
		var b strings.Builder
		pos := 0
		for i, c := range chunks {
			n := utf8.RuneCountInString(c.text)
			if c.start != pos || n == 0 || n > chunkChars {
				t.Fatalf("chunk %d: start %d (want %d), %d chars", i, c.start, pos, n)
			}
			// Cut at whitespace when the text has some.
			if in == words && i < len(chunks)-1 && !strings.HasSuffix(c.text, "\n") && !strings.HasSuffix(c.text, " ") {
				t.Fatalf("chunk %d splits a word: …%q", i, c.text[len(c.text)-10:])
			}
			pos += n
			b.WriteString(c.text)
		}
		if b.String() != in {
			t.Fatal("chunks do not add up to the input")
		}
	}
}

func TestBackgroundIndexing(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess := mustSession(t, s)
	id, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Tool: "bash",
		Output: strings.Repeat("background words\n", 2000), Status: ExecOK})
	if err != nil {
		t.Fatal(err)
	}
	// Without any search, the maintenance goroutine indexes once the writer
	// has been quiet for maintainIdle.
	var maxChunk, upto int64
	if err := s.r.QueryRow(`SELECT MAX(id) FROM output_chunks WHERE exec_id = ?`, id).Scan(&maxChunk); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for upto < maxChunk && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		if err := s.r.QueryRow(`SELECT indexed_upto FROM fts_state`).Scan(&upto); err != nil {
			t.Fatal(err)
		}
	}
	if upto < maxChunk {
		t.Fatalf("background indexing stopped at chunk %d of %d", upto, maxChunk)
	}
	var n int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM output_fts WHERE output_fts MATCH 'background'`).Scan(&n); err != nil || n == 0 {
		t.Errorf("index has %d matching chunks (%v)", n, err)
	}
}

func TestSetToolPreview(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	sess, err := s.CreateSession(ctx, Session{Persona: "default"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.SaveToolExecution(ctx, ToolExecution{SessionID: sess.ID, Tool: "run_command", Output: "long output", Status: ExecOK})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetToolPreview(ctx, id, "[output #1: …]"); err != nil {
		t.Fatal(err)
	}
	e, err := s.ToolExecution(ctx, id)
	if err != nil || e.Preview != "[output #1: …]" {
		t.Fatalf("preview = %q, %v", e.Preview, err)
	}
	if err := s.SetToolPreview(ctx, id+99, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
}
