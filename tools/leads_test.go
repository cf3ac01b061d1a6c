package tools

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"polly/memory/chat"
	"polly/memory/store"
)

func leadsFixture(t *testing.T) (*Registry, *store.Store, string) {
	t.Helper()
	root := t.TempDir()
	st, err := store.Open(filepath.Join(root, ".agent", "polly.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return NewRegistry(LeadTools(st, root)...), st, root
}

func leadsCall(t *testing.T, r *Registry, tool string, args any) Result {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return r.Execute(context.Background(), chat.ToolCall{ID: "1", Name: tool, Arguments: string(b)}, Exec{Gate: AllowAll{}})
}

func TestLeadsSaveMergesDuplicates(t *testing.T) {
	r, st, _ := leadsFixture(t)
	src := "https://dir.test/berlin"
	res := leadsCall(t, r, "leads_save", map[string]any{"list": "berlin-saas", "leads": []map[string]string{
		{"company": "Acme GmbH", "website": "https://acme.test/", "source_url": src},
		{"company": "Beta Labs", "website": "beta.test", "source_url": src},
		{"company": "Gamma & Co", "website": "http://gamma.test/about", "phone": "+49 30 1234", "source_url": src},
		// Same domain as leads[0], no email: the same company.
		{"company": "ACME", "website": "http://www.acme.test/contact", "phone": "+49 30 999", "source_url": "https://acme.test/contact", "notes": "HQ Berlin"},
	}})
	if res.IsError {
		t.Fatal(res.Output)
	}
	webHas(t, res.Output, `list "berlin-saas": 3 saved (new), 1 merged into existing leads, 0 rejected; the list now has 3 leads.`,
		`leads[3] (ACME, http://www.acme.test/contact) is a duplicate (same domain "acme.test" and email ""): merged into leads[0] of this call`,
		"updated company, phone, notes")
	if res.Meta["saved"] != 3 || res.Meta["merged"] != 1 || res.Meta["rejected"] != 0 {
		t.Errorf("meta %v", res.Meta)
	}
	leads, err := st.Leads(context.Background(), "berlin-saas")
	if err != nil || len(leads) != 3 {
		t.Fatalf("%d leads (%v)", len(leads), err)
	}
	if a := leads[0]; a.Company != "ACME" || a.Phone != "+49 30 999" || a.SourceURL != src || !strings.Contains(a.Notes, "also found at https://acme.test/contact") {
		t.Errorf("merged lead %+v", a)
	}

	// A later call: a contact at Acme is a new row; the same company again merges into the stored row.
	res = leadsCall(t, r, "leads_save", map[string]any{"list": "berlin-saas", "leads": []map[string]string{
		{"contact_name": "Jane Roe", "title": "CTO", "email": "Jane.Roe@acme.test", "source_url": "https://acme.test/team"},
		{"company": "Beta Labs", "website": "https://beta.test", "source_url": src},
	}})
	webHas(t, res.Output, "1 saved (new), 1 merged", "merged into existing lead #2; nothing new", "the list now has 4 leads")
}

func TestLeadsSaveRejectsWithReasons(t *testing.T) {
	r, st, _ := leadsFixture(t)
	res := leadsCall(t, r, "leads_save", map[string]any{"list": "l", "leads": []map[string]string{
		{"company": "Good One", "website": "good.test", "email": "sales@good.test", "source_url": "https://good.test/contact"},
		{"company": "No Source", "website": "nosource.test"},
		{"company": "Bad Mail", "website": "badmail.test", "email": "jane@badmail", "source_url": "https://badmail.test"},
		{"company": "Worse Mail", "email": "jane at worse.test", "source_url": "https://worse.test"},
		{"company": "Profile Only", "website": "https://www.linkedin.com/company/x", "source_url": "https://www.linkedin.com/company/x"},
		{"company": "No Key", "source_url": "https://dir.test/"},
		{"company": "Fake Source", "website": "fake.test", "source_url": "found it on Google"},
	}})
	if res.IsError {
		t.Fatal(res.Output)
	}
	webHas(t, res.Output, "1 saved (new), 0 merged into existing leads, 6 rejected",
		"leads[1] (No Source, nosource.test): missing source_url", "never invent data",
		`leads[2] (Bad Mail, jane@badmail): invalid email "jane@badmail": domain "badmail" has no top-level domain`,
		`leads[3] (Worse Mail, jane at worse.test): invalid email "jane at worse.test": not an email address`,
		`leads[4] (Profile Only, https://www.linkedin.com/company/x): website "https://www.linkedin.com/company/x" is a page on linkedin.com`,
		"leads[5] (No Key): needs a website or an email",
		`leads[6] (Fake Source, fake.test): source_url "found it on Google" is not an http(s) URL`)
	if leads, _ := st.Leads(context.Background(), "l"); len(leads) != 1 || leads[0].Email != "sales@good.test" {
		t.Errorf("stored %+v", leads)
	}
	// All rejected: an error result.
	res = leadsCall(t, r, "leads_save", map[string]any{"list": "l", "leads": []map[string]string{{"company": "X", "website": "x.test"}}})
	if !res.IsError {
		t.Errorf("nothing saved but not an error: %s", res.Output)
	}
	// Schema: an empty batch and unknown fields are refused before running.
	res = leadsCall(t, r, "leads_save", map[string]any{"list": "l", "leads": []any{}})
	webHas(t, res.Output, "error: leads_save: invalid arguments")
	res = leadsCall(t, r, "leads_save", map[string]any{"list": "l", "leads": []map[string]string{{"linkedin": "x", "source_url": "https://a.test"}}})
	webHas(t, res.Output, "linkedin")
}

func TestCheckEmail(t *testing.T) {
	for in, want := range map[string]string{
		"Jane.Roe@Acme.test":                 "jane.roe@acme.test",
		" mailto:info@acme.co.uk?subject=Hi": "info@acme.co.uk",
		"Jane Roe <jane@acme.test>":          "jane@acme.test",
		"jane+leads@xn--mller-kva.de":        "jane+leads@xn--mller-kva.de",
		"kontakt@müller.de":                  "kontakt@müller.de",
	} {
		if got, err := checkEmail(in); err != nil || got != want {
			t.Errorf("checkEmail(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "jane", "jane@", "@acme.test", "jane@acme", "jane@@acme.test", "jane@acme..test",
		"jane@-acme.test", "jane@acme.t", "jane@acme.123", `"jane roe"@acme.test`, "jane@[127.0.0.1]", ".jane@acme.test",
		"jane@acme.test, joe@acme.test", "jane@acme_corp.test"} {
		if got, err := checkEmail(in); err == nil {
			t.Errorf("checkEmail(%q) accepted as %q", in, got)
		}
	}
}

func TestLeadsExportCSVRoundTrip(t *testing.T) {
	r, st, root := leadsFixture(t)
	tricky := []map[string]string{
		{"company": "Comma, Inc.", "website": "comma.test", "contact_name": `Jane "JJ" Roe`, "title": "CEO, founder",
			"email": "jane@comma.test", "phone": "+1 (555) 010-0000", "source_url": "https://comma.test/team?a=1,2",
			"notes": "line one\nline two, with comma\nand \"quotes\""},
		{"company": "Plain", "website": "plain.test", "source_url": "https://plain.test/"},
		{"company": "Ünïcødé GmbH", "website": "unicode.test", "source_url": "https://unicode.test/", "notes": "Straße; Köln"},
	}
	if res := leadsCall(t, r, "leads_save", map[string]any{"list": "export me", "leads": tricky}); res.IsError {
		t.Fatal(res.Output)
	}
	reg := NewRegistry(LeadTools(st, root)...)
	acc, err := reg.tools["leads_export"].Access(context.Background(), json.RawMessage(`{"list":"export me","path":"out/sub/leads.csv"}`))
	if err != nil || acc.Kind != AccessWrite || len(acc.Paths) != 1 || acc.Paths[0] != filepath.Join(root, "out/sub/leads.csv") {
		t.Errorf("access %+v %v", acc, err)
	}
	res := leadsCall(t, r, "leads_export", map[string]string{"list": "export me", "path": "out/sub/leads.csv"})
	if res.IsError {
		t.Fatal(res.Output)
	}
	webHas(t, res.Output, `wrote 3 leads of list "export me" to out/sub/leads.csv (4 rows with the header`)
	if len(res.Files) != 1 || res.Files[0] != "out/sub/leads.csv" {
		t.Errorf("files %v", res.Files)
	}
	raw, err := os.ReadFile(filepath.Join(root, "out/sub/leads.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(raw), "\r\n") || !strings.HasPrefix(string(raw), strings.Join(LeadsCSVHeader, ",")+"\r\n") {
		t.Errorf("not RFC 4180 (CRLF, header first):\n%q", raw)
	}
	rows, err := csv.NewReader(strings.NewReader(string(raw))).ReadAll()
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	leads, _ := st.Leads(context.Background(), "export me")
	if len(rows) != len(leads)+1 {
		t.Fatalf("%d rows for %d leads", len(rows), len(leads))
	}
	for i, l := range leads {
		want := []string{l.List, l.Company, l.Website, l.Domain, l.ContactName, l.Title, l.Email, l.Phone, l.SourceURL, l.Notes,
			l.CreatedAt.Format(time.RFC3339), l.UpdatedAt.Format(time.RFC3339)}
		if strings.Join(rows[i+1], "\x00") != strings.Join(want, "\x00") {
			t.Errorf("row %d:\n got %q\nwant %q", i+1, rows[i+1], want)
		}
	}
	if rows[1][1] != "Comma, Inc." || rows[1][9] != "line one\nline two, with comma\nand \"quotes\"" || rows[1][4] != `Jane "JJ" Roe` {
		t.Errorf("tricky row %q", rows[1])
	}

	// Default path, and errors.
	res = leadsCall(t, r, "leads_export", map[string]string{"list": "export me"})
	webHas(t, res.Output, "to leads-export-me.csv")
	res = leadsCall(t, r, "leads_export", map[string]string{"list": "nope", "path": "x.csv"})
	webHas(t, res.Output, `lead list "nope" is empty or does not exist; lists: "export me" (3)`)
	os.Mkdir(filepath.Join(root, "adir"), 0o755)
	res = leadsCall(t, r, "leads_export", map[string]string{"list": "export me", "path": "adir"})
	webHas(t, res.Output, "adir is a directory")
}
