package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/memory/store"
	"polly/tools"
)

// runLeads calls leadsCommand directly: the case in cli.go's switch is
// wired separately.
func runLeads(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := leadsCommand(context.Background(), Env{Dir: dir, Stdout: &out, Stderr: &out}, nil, args)
	return out.String(), err
}

func TestLeadsCommand(t *testing.T) {
	dir := t.TempDir()
	out, err := runLeads(t, dir, "list")
	if err != nil || !strings.Contains(out, "no leads yet") {
		t.Fatalf("empty dir: %q %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".agent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("listing created .agent/: %v", err)
	}

	st, err := store.Open(filepath.Join(dir, ".agent", "polly.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.SaveLeads(context.Background(), []store.Lead{
		{List: "saas", Company: "Acme, Inc.", Website: "acme.test", Email: "jane@acme.test", ContactName: "Jane\x1b[31m Roe", SourceURL: "https://acme.test/team", Notes: "two\nlines"},
		{List: "saas", Company: "Beta", Website: "beta.test", SourceURL: "https://dir.test/"},
		{List: "agencies", Company: "Gamma", Website: "gamma.test", SourceURL: "https://dir.test/"},
	})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	out, err = runLeads(t, dir, "list")
	if err != nil || !strings.Contains(out, "LIST") || !strings.Contains(out, "agencies  1") || !strings.Contains(out, "saas      2") {
		t.Errorf("lists: %q %v", out, err)
	}
	out, err = runLeads(t, dir, "list", "saas")
	if err != nil || !strings.Contains(out, "Acme, Inc.") || !strings.Contains(out, "jane@acme.test") || !strings.Contains(out, `2 leads in list "saas"`) {
		t.Errorf("table: %q %v", out, err)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("escape sequence reached the terminal: %q", out)
	}

	out, err = runLeads(t, dir, "export", "saas")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 3 || strings.Join(rows[0], ",") != strings.Join(tools.LeadsCSVHeader, ",") ||
		rows[1][1] != "Acme, Inc." || rows[1][9] != "two\nlines" {
		t.Errorf("stdout CSV %q (%v)", rows, err)
	}
	out, err = runLeads(t, dir, "export", "saas", "exports/saas.csv")
	if err != nil || !strings.Contains(out, `wrote 2 leads of list "saas" to exports/saas.csv`) {
		t.Errorf("file export: %q %v", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "exports", "saas.csv")); err != nil || !strings.HasPrefix(string(b), "list,company,") {
		t.Errorf("file: %q %v", b, err)
	}

	if _, err := runLeads(t, dir, "export", "nope"); err == nil || !strings.Contains(err.Error(), "lists: agencies (1), saas (2)") {
		t.Errorf("unknown list: %v", err)
	}
	for _, args := range [][]string{{}, {"show"}, {"export"}, {"list", "a", "b"}, {"export", "a", "b", "c"}} {
		var ue *usageError
		if _, err := runLeads(t, dir, args...); !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
