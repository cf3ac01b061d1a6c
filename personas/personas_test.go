package personas

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, dir string) *Set {
	t.Helper()
	s, errs := Load(dir)
	for _, err := range errs {
		t.Errorf("unexpected: %v", err)
	}
	return s
}

func TestBuiltins(t *testing.T) {
	s := load(t, "")
	if got, want := s.IDs(), []string{"default", "web_scraper", "coder", "b2b_leadgen"}; !slices.Equal(got, want) {
		t.Fatalf("IDs = %v, want %v", got, want)
	}
	files := []string{"read_file", "write_file", "edit_file", "list_dir", "glob", "grep"}
	outputs := []string{"read_tool_output", "grep_tool_output"}
	ws := []string{"workspace_save_fact", "workspace_log_error", "workspace_log_learning",
		"workspace_request_feature", "workspace_daily_log", "workspace_read"}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	want := []struct {
		id, name string
		temp     float64
		tools    []string
	}{
		{"default", "Polly", 0.5, KnownTools()},
		{"web_scraper", "scraper", 0.3, cat([]string{"fetch_url", "extract"}, files, []string{"run_command"}, outputs,
			[]string{"task_plan", "leads_save", "leads_export"}, ws)},
		{"coder", "coder", 0.3, cat(files, []string{"run_command", "fetch_url"}, outputs, []string{"task_plan"}, ws)},
		{"b2b_leadgen", "leadgen", 0.4, cat([]string{"fetch_url", "extract", "leads_save", "leads_export"}, files, outputs,
			[]string{"task_plan"}, ws)},
	}
	for i, w := range want {
		p := s.All()[i]
		if p.ID != w.id || p.Name != w.name || p.Temperature != w.temp || p.Source != BuiltinSource {
			t.Errorf("persona %d = %s/%s/%v/%s", i, p.ID, p.Name, p.Temperature, p.Source)
		}
		a, b := slices.Sorted(slices.Values(p.Tools)), slices.Sorted(slices.Values(w.tools))
		if !slices.Equal(a, b) {
			t.Errorf("%s tools =\n%v\nwant\n%v", p.ID, a, b)
		}
		if p.Role == "" || p.Description == "" || p.Key == "" {
			t.Errorf("%s lacks role, description or key", p.ID)
		}
		if n := len(p.SystemPrompt); n < 1500 || n > 3200 {
			t.Errorf("%s prompt is %d bytes; want about 1.5-3 KB", p.ID, n)
		}
		if p.ID != DefaultID && p.Allows("delegate_task") {
			t.Errorf("specialist %s may delegate", p.ID)
		}
	}
	if !s.Default().Allows("delegate_task") || s.Default().Name != "Polly" {
		t.Error("Polly cannot delegate")
	}
}

func TestBuiltinPromptsHaveMandatorySaves(t *testing.T) {
	for _, p := range load(t, "").All() {
		_, saves, ok := strings.Cut(p.SystemPrompt, "## MANDATORY SAVES")
		if !ok {
			t.Errorf("%s: no MANDATORY SAVES section", p.ID)
			continue
		}
		for _, s := range []string{`workspace_save_fact("Project Facts"`, `workspace_save_fact("Preferences"`,
			`workspace_save_fact("Data Sources"`, "workspace_log_error(", "workspace_daily_log("} {
			if !strings.Contains(saves, s) {
				t.Errorf("%s: MANDATORY SAVES lacks %s", p.ID, s)
			}
		}
		// Every tool the prompt tells the model to call must be one it has.
		for _, tool := range KnownTools() {
			if strings.Contains(p.SystemPrompt, "`"+tool+"`") || strings.Contains(p.SystemPrompt, "`"+tool+"(") {
				if !p.Allows(tool) {
					t.Errorf("%s: prompt mentions %s, which it may not use", p.ID, tool)
				}
			}
		}
	}
}

func TestOverrideChangesPrompt(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "my-coder.json", `{"id": "coder", "system_prompt": "You write Rust only.", "temperature": 0}`)
	s := load(t, dir)
	p, ok := s.Find("coder")
	if !ok || p.SystemPrompt != "You write Rust only." || p.Temperature != 0 || p.Source != path {
		t.Fatalf("override not applied: %+v", p)
	}
	// Fields left out fall back to the built-in's.
	builtin, _ := load(t, "").Find("coder")
	if p.Name != "coder" || p.Role != builtin.Role || !slices.Equal(p.Tools, builtin.Tools) {
		t.Errorf("missing fields did not fall back: %+v", p)
	}
	if got := s.IDs(); !slices.Equal(got, []string{"default", "web_scraper", "coder", "b2b_leadgen"}) {
		t.Errorf("override changed the order: %v", got)
	}
}

func TestNewPersonaAdded(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "writer.json", `{"id": "writer", "name": "Scribe", "system_prompt": "You write docs.",
		"tools": ["read_file", "write_file", "read_file"], "model": "gpt-5-mini"}`)
	write(t, dir, "analyst.json", `{"id": "analyst", "system_prompt": "You analyse data."}`)
	write(t, dir, "notes.txt", `not a persona`)
	s := load(t, dir)
	if got := s.IDs(); !slices.Equal(got, []string{"default", "web_scraper", "coder", "b2b_leadgen", "analyst", "writer"}) {
		t.Fatalf("IDs = %v", got)
	}
	w, _ := s.Find("writer")
	if w.Name != "Scribe" || w.Model != "gpt-5-mini" || !slices.Equal(w.Tools, []string{"read_file", "write_file"}) {
		t.Errorf("writer = %+v", w)
	}
	a, _ := s.Find("analyst")
	if a.Name != "analyst" || a.Temperature != newTemperature || a.Allows("delegate_task") || !a.Allows("read_file") {
		t.Errorf("analyst defaults = %+v", a)
	}
}

func TestBrokenFilesReportedAndSkipped(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"syntax.json":   "{\n  \"id\": \"x\",\n  \"name\": oops\n}",
		"noid.json":     `{"name": "nobody", "system_prompt": "hi"}`,
		"hot.json":      `{"id": "hot", "temperature": 2.5, "system_prompt": "hi"}`,
		"type.json":     `{"id": "typed", "temperature": "warm", "system_prompt": "hi"}`,
		"noprompt.json": `{"id": "mute"}`,
		"badid.json":    `{"id": "has space", "system_prompt": "hi"}`,
		"array.json":    `[1, 2]`,
	}
	for name, body := range cases {
		write(t, dir, name, body)
	}
	s, errs := Load(dir)
	if got := s.IDs(); !slices.Equal(got, []string{"default", "web_scraper", "coder", "b2b_leadgen"}) {
		t.Errorf("IDs = %v; broken files must be skipped, built-ins kept", got)
	}
	if len(errs) != len(cases) {
		t.Errorf("%d errors for %d broken files: %v", len(errs), len(cases), errs)
	}
	for name := range cases {
		found := false
		for _, err := range errs {
			var fe *FileError
			if errors.As(err, &fe) && filepath.Base(fe.File) == name && fe.Skipped && strings.Contains(err.Error(), name) {
				found = true
			}
		}
		if !found {
			t.Errorf("no error names %s: %v", name, errs)
		}
	}
	for _, err := range errs {
		if strings.Contains(err.Error(), "syntax.json") && !strings.Contains(err.Error(), "line 3") {
			t.Errorf("syntax error without its line: %v", err)
		}
	}
}

func TestUnknownToolReportedButLoaded(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "scraper.json", `{"id": "web_scraper", "tools": ["fetch_url", "browser_click"], "colour": "red"}`)
	s, errs := Load(dir)
	p, _ := s.Find("scraper")
	if !slices.Equal(p.Tools, []string{"fetch_url"}) {
		t.Errorf("tools = %v", p.Tools)
	}
	if len(errs) != 2 || !strings.Contains(errs[0].Error()+errs[1].Error(), `"browser_click"`) ||
		!strings.Contains(errs[0].Error()+errs[1].Error(), `"colour"`) {
		t.Errorf("errs = %v", errs)
	}
	for _, err := range errs {
		var fe *FileError
		if !errors.As(err, &fe) || fe.Skipped || !strings.HasSuffix(fe.File, "scraper.json") {
			t.Errorf("want a non-fatal error on scraper.json, got %v", err)
		}
	}
}

func TestDuplicateIDAndNameClash(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.json", `{"id": "coder", "temperature": 0.1}`)
	write(t, dir, "b.json", `{"id": "Coder", "temperature": 0.9}`)
	write(t, dir, "c.json", `{"id": "helper", "name": "Polly", "system_prompt": "hi"}`)
	s, errs := Load(dir)
	if p, _ := s.Find("coder"); p.Temperature != 0.1 {
		t.Errorf("second file with the same id won: %v", p.Temperature)
	}
	if p, _ := s.Find("polly"); p.ID != DefaultID {
		t.Errorf("Find(polly) = %s", p.ID)
	}
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "b.json") || !strings.Contains(errs[1].Error(), `name "Polly"`) {
		t.Errorf("errs = %v", errs)
	}
}

func TestLoadMissingDir(t *testing.T) {
	s := load(t, filepath.Join(t.TempDir(), "none"))
	if len(s.All()) != 4 {
		t.Errorf("got %d personas", len(s.All()))
	}
}

func TestFind(t *testing.T) {
	s := load(t, "")
	for q, id := range map[string]string{"coder": "coder", "B2B_LEADGEN": "b2b_leadgen", "leadgen": "b2b_leadgen",
		"Scraper": "web_scraper", " polly ": "default", "default": "default"} {
		if p, ok := s.Find(q); !ok || p.ID != id {
			t.Errorf("Find(%q) = %s, %v; want %s", q, p.ID, ok, id)
		}
	}
	if _, ok := s.Find("nobody"); ok {
		t.Error("Find(nobody) succeeded")
	}
	// Callers get copies: changing one does not change the set.
	p, _ := s.Find("coder")
	p.Tools[0] = "changed"
	if q, _ := s.Find("coder"); q.Tools[0] == "changed" {
		t.Error("Find returned shared state")
	}
	all := s.All()
	all[0].Tools[0] = "changed"
	if s.Default().Tools[0] == "changed" {
		t.Error("All returned shared state")
	}
}

func TestKnownToolsIsACopy(t *testing.T) {
	k := KnownTools()
	k[0] = "x"
	if KnownTools()[0] != "read_file" || len(KnownTools()) != 21 {
		t.Error("KnownTools shares state or changed")
	}
}

func TestTypeErrorsReadable(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "x.json", `{"id": "coder", "tools": "fetch_url"}`)
	_, errs := Load(dir)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `"tools" must be a list of strings, got string`) {
		t.Errorf("errs = %v", errs)
	}
}

// Persona files get the same located errors as config files: line and
// column, and a "did you mean" for a misspelt field.
func TestErrorsNameLineAndColumn(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "typo.json", "{\"id\": \"coder\",\n  \"temprature\": 0.2}")
	write(t, dir, "elem.json", "{\"id\": \"coder2\", \"system_prompt\": \"hi\",\n  \"tools\": [\"read_file\", 3]}")
	write(t, dir, "twice.json", "{\"id\": \"a\",\n \"id\": \"b\", \"system_prompt\": \"hi\"}")
	_, errs := Load(dir)
	var all []string
	for _, err := range errs {
		all = append(all, err.Error())
	}
	got := strings.Join(all, "\n")
	for _, want := range []string{
		`typo.json: line 2, column 3: unknown field "temprature" ignored (did you mean "temperature"?)`,
		`elem.json: line 2, column 26: "tools" must be a list of strings, got number 3 (file skipped)`,
		`twice.json: line 2, column 2: "id" is set twice (file skipped)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
}
