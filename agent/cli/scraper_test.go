package cli

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"polly/agent/llmtest"
)

const directoryPage = `<!doctype html><html><head><title>Member directory</title></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<main><h1>Member directory</h1>
<ul>
<li class="company"><a href="/c/acme">Acme Tools</a> <span class="site">https://acme.example</span> <span class="email">sales@acme.example</span></li>
<li class="company"><a href="/c/bolt">Bolt &amp; Nut, Inc.</a> <span class="site">https://bolt.example</span> <span class="email"></span></li>
<li class="company"><a href="/c/crane">Crane "Heavy" Lifting</a> <span class="site">https://crane.example</span> <span class="email">info@crane.example</span></li>
</ul></main><footer>© Directory</footer></body></html>`

// Must show (issue 7 #3): with --persona web_scraper, one run fetches a
// page, extracts rows, saves them as leads and exports a CSV.
func TestScraperFetchExtractSaveExport(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/members" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, directoryPage)
	}))
	defer site.Close()
	page := site.URL + "/members"
	leads := fmt.Sprintf(`{"list":"members","leads":[
		{"company":"Acme Tools","website":"https://acme.example","email":"sales@acme.example","source_url":%q},
		{"company":"Bolt & Nut, Inc.","website":"https://bolt.example","source_url":%q},
		{"company":"Crane \"Heavy\" Lifting","website":"https://crane.example","email":"info@crane.example","source_url":%q,"notes":"heavy lifting,\ncranes"}]}`, page, page, page)
	srv := llmtest.NewServer(t,
		llmtest.Call("fetch_url", fmt.Sprintf(`{"url":%q}`, page)),
		llmtest.Call("extract", fmt.Sprintf(`{"url":%q,"selector":"li.company","fields":{"company":"a","profile":"a@href","website":".site","email":".email"}}`, page)),
		llmtest.Call("leads_save", leads),
		llmtest.Call("leads_export", `{"list":"members","path":"exports/members.csv"}`),
		llmtest.Text("Saved 3 leads to exports/members.csv."),
	)
	env, polly := cliEnv(t, srv.URL(), nil)
	r := polly("-p", "Build a lead list from "+page, "--persona", "web_scraper", "--mode", "auto-edit")
	if r.code != 0 {
		t.Fatalf("code %d\n%s", r.code, r.stderr)
	}
	reqs := srv.Requests()
	results := make([]string, 0, 4)
	for _, q := range reqs[1:] {
		results = append(results, q.LastTurn().Content)
	}
	if !strings.Contains(results[0], "# Member directory") || !strings.Contains(results[0], site.URL+"/c/acme") {
		t.Fatalf("fetch_url result lacks the heading or absolute links:\n%s", results[0])
	}
	if !strings.Contains(results[1], `"company": "Bolt & Nut, Inc."`) && !strings.Contains(results[1], `"company":"Bolt & Nut, Inc."`) {
		t.Fatalf("extract result:\n%s", results[1])
	}
	if !strings.Contains(results[1], site.URL+"/c/crane") {
		t.Fatalf("extract did not make the attribute absolute:\n%s", results[1])
	}
	if !strings.Contains(results[2], "3") || strings.Contains(results[2], "error") {
		t.Fatalf("leads_save result: %s", results[2])
	}
	f, err := os.Open(filepath.Join(env.Dir, "exports", "members.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0][1] != "company" {
		t.Fatalf("CSV rows: %q", rows)
	}
	found := false
	for _, row := range rows[1:] {
		if row[1] == `Crane "Heavy" Lifting` && strings.Contains(row[9], "heavy lifting,\ncranes") && row[8] == page {
			found = true
		}
	}
	if !found {
		t.Fatalf("CSV lost quotes, commas, newlines or the source: %q", rows)
	}
	// The same list through the command line.
	out := polly("leads", "export", "members")
	if out.code != 0 || strings.Count(out.stdout, "\n") < 4 {
		t.Fatalf("polly leads export: %+v", out)
	}
}
