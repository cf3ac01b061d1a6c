package tools

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"polly/memory/chat"
)

const directoryPage = `<!DOCTYPE html>
<html><head><title>Berlin SaaS Directory | DirCo</title><meta charset="utf-8"></head>
<body>
<header><nav><a href="/">Home</a> <a href="/about">About us</a> <a href="/login">Log in</a></nav></header>
<main>
<h1>Berlin SaaS Directory</h1>
<p>Companies building software in Berlin, updated weekly.</p>
<ul class="companies">
 <li class="company" data-id="17"><h2><a href="/companies/acme">Acme GmbH</a></h2>
   <p class="desc">Payroll   software
   for small teams</p><a class="site" href="https://acme.test/">acme.test</a><img src="logos/acme.png" alt="Acme"></li>
 <li class="company" data-id="18"><h2><a href="companies/beta?ref=dir">Beta Labs</a></h2>
   <p class="desc">Data pipelines</p><a class="site" href="https://beta.test/">beta.test</a></li>
 <li class="company" data-id="19"><h2><a href="../companies/gamma">Gamma &amp; Co</a></h2>
   <p class="desc">Invoicing</p></li>
</ul>
</main>
<footer><p>© 2026 DirCo · <a href="/imprint">Imprint</a> · <a href="/privacy">Privacy</a></p></footer>
</body></html>`

// testSite serves the pages the web tests fetch.
func testSite(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# test robots\nUser-agent: *\nDisallow: /\n\nUser-agent: Polly\nDisallow: /private # members only\nAllow: /private/open\nDisallow: /*.cgi$\n")
	})
	mux.HandleFunc("/dir/list", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, directoryPage)
	})
	for _, p := range []string{"/private/members", "/private/open/page", "/run.cgi", "/run.cgi/x"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "content of "+r.URL.Path)
		})
	}
	mux.HandleFunc("/loop/a", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop/b", http.StatusFound) })
	mux.HandleFunc("/loop/b", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop/a", http.StatusFound) })
	mux.HandleFunc("/hop/", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/hop/"), "%d", &n)
		if n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusMovedPermanently)
			return
		}
		io.WriteString(w, "arrived")
	})
	mux.HandleFunc("/to-file", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "file:///etc/passwd")
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		const size = 10 << 20
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", fmt.Sprint(size))
		line := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
		for sent := 0; sent < size; sent += len(line) {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/slow-headers", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/trickle", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusOK)
		for i := 0; i < 100; i++ {
			if _, err := io.WriteString(w, "<p>x</p>"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	binaries := map[string]struct {
		ct   string
		body []byte
	}{
		"/logo.png":     {"image/png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01")},
		"/blob":         {"application/octet-stream", []byte{0, 1, 2, 3, 0xff, 0xfe}},
		"/report.pdf":   {"application/pdf", []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj")},
		"/fake.html":    {"text/html", []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00 not really html")},
		"/untyped-blob": {"", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00")},
	}
	for p, b := range binaries {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = []string{b.ct}
			w.Write(b.body)
		})
	}
	mux.HandleFunc("/api/data.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"name":"Acme","tags":["payroll","hr"],"size":{"employees":42}}`)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=ISO-8859-1")
		w.Write([]byte("<html><head><title>Caf\xe9 M\xfcller</title></head><body><h1>Caf\xe9 M\xfcller</h1><p>Stra\xdfe 5, K\xf6ln</p></body></html>"))
	})
	mux.HandleFunc("/cp1252-meta", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><head><meta charset=\"windows-1252\"><title>Quotes</title></head><body><p>\x93smart\x94 \x80 5</p></body></html>"))
	})
	mux.HandleFunc("/gz", func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			http.Error(w, "gzip only", http.StatusNotAcceptable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, strings.Repeat("compressed hello\n", 100))
		zw.Close()
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "<html><body><h1>Not found</h1></body></html>")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func webTools(opts WebOptions) (fetch, extract Tool) {
	if opts.UserAgent == "" {
		opts.UserAgent = "Polly/test (+https://example.invalid/polly)"
	}
	ts := WebTools(opts)
	return ts[0], ts[1]
}

// webCall runs a tool through the registry, as the agent loop does.
func webCall(t *testing.T, tool Tool, args any) Result {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return NewRegistry(tool).Execute(context.Background(), chat.ToolCall{ID: "1", Name: tool.Name(), Arguments: string(b)}, Exec{Gate: AllowAll{}})
}

func webHas(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func webLacks(t *testing.T, out string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(out, b) {
			t.Errorf("output has %q:\n%s", b, out)
		}
	}
}

func TestFetchDirectoryPageMarkdown(t *testing.T) {
	srv := testSite(t)
	fetch, _ := webTools(WebOptions{RespectRobots: true})
	res := webCall(t, fetch, map[string]string{"url": srv.URL + "/dir/list"})
	if res.IsError {
		t.Fatal(res.Output)
	}
	webHas(t, res.Output,
		"URL: "+srv.URL+"/dir/list\n",
		"Status: 200 OK\n",
		"Content-Type: text/html; charset=utf-8\n",
		"Title: Berlin SaaS Directory | DirCo\n",
		"Size: ",
		"# Berlin SaaS Directory",
		"[Acme GmbH]("+srv.URL+"/companies/acme)",
		"[Beta Labs]("+srv.URL+"/dir/companies/beta?ref=dir)",
		"[Gamma & Co]("+srv.URL+"/companies/gamma)",
		"[acme.test](https://acme.test/)",
		srv.URL+"/dir/logos/acme.png",
		"Payroll software for small teams",
	)
	// Navigation and footer are boilerplate.
	webLacks(t, res.Output, "About us", "Imprint", "Log in", "](/")
}

// A listing whose links readability would drop (it keeps only the long
// intro) comes back whole, links absolute, navigation and footer gone.
func TestFetchListingFallsBackToWholePage(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<html><head><title>A-Z index</title></head><body><nav><a href="/">Home</a> <a href="/about">About us</a></nav>` +
		`<div id="sidebar"><h1>Company index</h1><p>` + strings.Repeat("Intro text about the index and how it works. ", 20) + `</p></div><div class="links">`)
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, `<div class="item"><a href="../c/%d">Company number %d</a></div>`, i, i)
	}
	b.WriteString(`</div><footer><a href="/imprint">Imprint</a></footer></body></html>`)
	mux := http.NewServeMux()
	mux.HandleFunc("/a/b", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, b.String()) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	fetch, _ := webTools(WebOptions{})
	res := webCall(t, fetch, map[string]string{"url": srv.URL + "/a/b"})
	webHas(t, res.Output, "Content: whole page as Markdown", "# Company index", "Intro text",
		"[Company number 0]("+srv.URL+"/c/0)", "[Company number 39]("+srv.URL+"/c/39)")
	webLacks(t, res.Output, "About us", "Imprint")
}

func TestFetchBaseHref(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/a/page", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<html><head><base href="/static/"></head><body><h1>T</h1><p><a href="x.html">rel</a></p></body></html>`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	fetch, _ := webTools(WebOptions{})
	res := webCall(t, fetch, map[string]string{"url": srv.URL + "/a/page"})
	webHas(t, res.Output, "[rel]("+srv.URL+"/static/x.html)")
}

func TestExtractRows(t *testing.T) {
	srv := testSite(t)
	_, extract := webTools(WebOptions{RespectRobots: true})
	res := webCall(t, extract, map[string]any{
		"url":      srv.URL + "/dir/list",
		"selector": "li.company",
		// Keys deliberately not in alphabetical order: the output keeps this order.
		"fields": json.RawMessage(`{"name": "h2 a", "profile": "h2 a@href", "id": "@data-id", "site": "a.site@href",
			"logo": "img@src", "missing": "span.none", "all": ""}`),
	})
	if res.IsError {
		t.Fatal(res.Output)
	}
	head, _, _ := strings.Cut(res.Output, "\n")
	webHas(t, head, "3 rows from "+srv.URL+"/dir/list")
	source, body, ok := OpenEnvelope(res.Output)
	if !ok || source != srv.URL+"/dir/list" || res.Untrusted != source {
		t.Fatalf("rows not enveloped as from the page (source %q, Untrusted %q):\n%s", source, res.Untrusted, res.Output)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(body), &rows); err != nil {
		t.Fatalf("rows are not JSON: %v\n%s", err, body)
	}
	want := []map[string]any{
		{"name": "Acme GmbH", "profile": srv.URL + "/companies/acme", "id": "17", "site": "https://acme.test/",
			"logo": srv.URL + "/dir/logos/acme.png", "missing": nil, "all": "Acme GmbH Payroll software for small teams acme.test"},
		{"name": "Beta Labs", "profile": srv.URL + "/dir/companies/beta?ref=dir", "id": "18", "site": "https://beta.test/",
			"logo": nil, "missing": nil, "all": "Beta Labs Data pipelines beta.test"},
		{"name": "Gamma & Co", "profile": srv.URL + "/companies/gamma", "id": "19", "site": nil,
			"logo": nil, "missing": nil, "all": "Gamma & Co Invoicing"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), res.Output)
	}
	for i := range want {
		for k, v := range want[i] {
			if rows[i][k] != v {
				t.Errorf("row %d field %s = %#v, want %#v", i, k, rows[i][k], v)
			}
		}
	}
	// Field order as given.
	first := strings.SplitN(body, "\n", 3)[1]
	order := []string{`"name"`, `"profile"`, `"id"`, `"site"`, `"logo"`, `"missing"`, `"all"`}
	last := -1
	for _, k := range order {
		i := strings.Index(first, k)
		if i < last {
			t.Errorf("field %s out of order in %s", k, first)
		}
		last = i
	}
}

func TestExtractFromHTMLAndCaps(t *testing.T) {
	_, extract := webTools(WebOptions{})
	var b strings.Builder
	b.WriteString(`<table><tr><th>Name</th></tr>`)
	for i := 0; i < 612; i++ {
		fmt.Fprintf(&b, `<tr class="r"><td>Row <b>%d</b></td><td><a href="mailto:r%d@x.test">mail</a></td></tr>`, i, i)
	}
	b.WriteString(`</table>`)
	res := webCall(t, extract, map[string]any{"html": b.String(), "selector": "tr.r", "fields": json.RawMessage(`{"n": "td", "mail": "a@href"}`)})
	if res.IsError {
		t.Fatal(res.Output)
	}
	webHas(t, res.Output, "612 elements match", "first 500 rows", `{"n": "Row 0", "mail": "mailto:r0@x.test"}`, `"Row 499"`)
	webLacks(t, res.Output, `"Row 500"`)
	_, body, _ := OpenEnvelope(res.Output)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(body), &rows); err != nil || len(rows) != 500 {
		t.Fatalf("rows: %d (%v)", len(rows), err)
	}

	// No fields: each row's text.
	res = webCall(t, extract, map[string]any{"html": `<ul><li>a <i>b</i></li><li>c</li></ul>`, "selector": "li"})
	webHas(t, res.Output, `{"text": "a b"}`, `{"text": "c"}`)

	// Nothing matches: a hint, not an error.
	res = webCall(t, extract, map[string]any{"html": `<p>x</p>`, "selector": "li"})
	if res.IsError {
		t.Fatal(res.Output)
	}
	webHas(t, res.Output, "no element", "JavaScript")

	// An '@' inside an attribute selector is not the attribute separator.
	res = webCall(t, extract, map[string]any{"html": `<div class="c"><a href="mailto:a@b.test">a</a><a href="/x">x</a></div>`,
		"selector": "div.c", "fields": map[string]string{"mail": `a[href*="@"]@href`}})
	webHas(t, res.Output, `{"mail": "mailto:a@b.test"}`)
}

func TestExtractErrors(t *testing.T) {
	_, extract := webTools(WebOptions{})
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"bad selector", map[string]any{"html": "<p>x</p>", "selector": "li[", "fields": map[string]string{}}, `invalid CSS selector "li["`},
		{"bad pseudo", map[string]any{"html": "<p>x</p>", "selector": "p:nope(3)"}, "invalid CSS selector"},
		{"bad field selector", map[string]any{"html": "<p>x</p>", "selector": "p", "fields": map[string]string{"a": "h2 >> a"}}, "fields.a: invalid CSS selector"},
		{"bad attr", map[string]any{"html": "<p>x</p>", "selector": "p", "fields": map[string]string{"a": "a@"}}, "fields.a"},
		{"field not a string", map[string]any{"html": "<p>x</p>", "selector": "p", "fields": map[string]any{"a": 3}}, "fields"},
		{"both", map[string]any{"html": "<p>x</p>", "url": "https://x.test/", "selector": "p"}, "either url or html, not both"},
		{"neither", map[string]any{"selector": "p"}, "give url"},
		{"file url", map[string]any{"url": "file:///etc/passwd", "selector": "p"}, "read_file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := webCall(t, extract, c.args)
			if !res.IsError {
				t.Fatalf("no error: %s", res.Output)
			}
			webHas(t, res.Output, c.want)
		})
	}
}

func TestExtractJSONIsNotHTML(t *testing.T) {
	srv := testSite(t)
	_, extract := webTools(WebOptions{})
	res := webCall(t, extract, map[string]any{"url": srv.URL + "/api/data.json", "selector": "p"})
	if !res.IsError {
		t.Fatal(res.Output)
	}
	webHas(t, res.Output, "application/json, not HTML")
}

func TestFetchRedirects(t *testing.T) {
	srv := testSite(t)
	fetch, _ := webTools(WebOptions{Timeout: 5 * time.Second})
	start := time.Now()
	res := webCall(t, fetch, map[string]string{"url": srv.URL + "/loop/a"})
	if !res.IsError {
		t.Fatal(res.Output)
	}
	webHas(t, res.Output, "stopped after 5 redirects", srv.URL+"/loop/a → "+srv.URL+"/loop/b", "redirect loop")
	if time.Since(start) > 2*time.Second {
		t.Errorf("took %s", time.Since(start))
	}

	// Five hops are fine, six are not.
	res = webCall(t, fetch, map[string]string{"url": srv.URL + "/hop/5"})
	if res.IsError {
		t.Fatal(res.Output)
	}
	webHas(t, res.Output, "URL: "+srv.URL+"/hop/0", "Redirected from: "+srv.URL+"/hop/5", "arrived")
	res = webCall(t, fetch, map[string]string{"url": srv.URL + "/hop/6"})
	webHas(t, res.Output, "stopped after 5 redirects")
	webLacks(t, res.Output, "redirect loop")

	res = webCall(t, fetch, map[string]string{"url": srv.URL + "/to-file"})
	webHas(t, res.Output, "refused a redirect to a file: URL")
}

func TestFetchCapsBody(t *testing.T) {
	srv := testSite(t)
	var read atomic.Int64
	client := &http.Client{Transport: webCountingTransport{base: http.DefaultTransport, n: &read}}
	fetch, _ := webTools(WebOptions{HTTPClient: client})
	res := webCall(t, fetch, map[string]string{"url": srv.URL + "/big"})
	if res.IsError {
		t.Fatal(res.Output)
	}
	webHas(t, res.Output, "Size: 5.0 MB — CUT: the page is 10.0 MB, only the first 5.0 MB was read")
	// Never more than the cap plus one sniff buffer was read off the body.
	if n := read.Load(); n > webDefaultMaxBytes+sniffLen+1 {
		t.Errorf("read %d bytes of a 10 MB body; cap is %d", n, webDefaultMaxBytes)
	}
	if got := strings.Count(res.Output, "0123456789abcdef"); got != webDefaultMaxBytes/16 {
		t.Errorf("%d chunks in the output, want %d", got, webDefaultMaxBytes/16)
	}
}

type webCountingTransport struct {
	base http.RoundTripper
	n    *atomic.Int64
}

func (c webCountingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err == nil {
		resp.Body = webCountingBody{resp.Body, c.n}
	}
	return resp, err
}

type webCountingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b webCountingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func TestFetchTimeouts(t *testing.T) {
	srv := testSite(t)
	fetch, _ := webTools(WebOptions{Timeout: 300 * time.Millisecond})
	for _, c := range []struct{ path, want string }{
		{"/slow-headers", "waiting for the response"},
		{"/trickle", "reading the body"},
	} {
		start := time.Now()
		res := webCall(t, fetch, map[string]string{"url": srv.URL + c.path})
		took := time.Since(start)
		if !res.IsError {
			t.Fatalf("%s: no error: %s", c.path, res.Output)
		}
		webHas(t, res.Output, "timed out after", c.want, "limit 300ms")
		if took > 1500*time.Millisecond {
			t.Errorf("%s: took %s with a 300ms timeout", c.path, took)
		}
	}
}

func TestFetchRefusesBinary(t *testing.T) {
	srv := testSite(t)
	fetch, _ := webTools(WebOptions{})
	for path, want := range map[string]string{
		"/logo.png":     "binary content (image/png)",
		"/blob":         "binary content (application/octet-stream)",
		"/report.pdf":   "binary content (application/pdf)",
		"/fake.html":    "content looks like application/zip",
		"/untyped-blob": "content looks like image/gif",
	} {
		res := webCall(t, fetch, map[string]string{"url": srv.URL + path})
		if !res.IsError {
			t.Errorf("%s: not refused: %s", path, res.Output)
			continue
		}
		webHas(t, res.Output, "refused: "+srv.URL+path, want, "read only HTML, JSON and text")
	}
}

func TestFetchJSONTextGzipAndErrors(t *testing.T) {
	srv := testSite(t)
	fetch, _ := webTools(WebOptions{})
	res := webCall(t, fetch, map[string]string{"url": srv.URL + "/api/data.json"})
	webHas(t, res.Output, "Content: JSON, pretty-printed", "{\n  \"name\": \"Acme\",\n  \"tags\": [\n    \"payroll\",")

	res = webCall(t, fetch, map[string]string{"url": srv.URL + "/gz"})
	if res.IsError {
		t.Fatal(res.Output)
	}
	webHas(t, res.Output, "compressed hello\ncompressed hello\n", "Size: 1.7 KB")

	res = webCall(t, fetch, map[string]string{"url": srv.URL + "/missing"})
	if !res.IsError {
		t.Fatal("a 404 is not an error")
	}
	webHas(t, res.Output, "the server answered 404 Not Found", "Not found")
}

func TestFetchCharsets(t *testing.T) {
	srv := testSite(t)
	fetch, _ := webTools(WebOptions{})
	res := webCall(t, fetch, map[string]string{"url": srv.URL + "/latin1"})
	// WHATWG decodes iso-8859-1 labels as windows-1252, its superset.
	webHas(t, res.Output, "Title: Café Müller", "# Café Müller", "Straße 5, Köln", "decoded from windows-1252")
	res = webCall(t, fetch, map[string]string{"url": srv.URL + "/cp1252-meta"})
	webHas(t, res.Output, "“smart” € 5", "decoded from windows-1252")
}

func TestFetchRobots(t *testing.T) {
	srv := testSite(t)
	fetch, extract := webTools(WebOptions{RespectRobots: true})
	res := webCall(t, fetch, map[string]string{"url": srv.URL + "/private/members"})
	if !res.IsError {
		t.Fatalf("disallowed page fetched: %s", res.Output)
	}
	webHas(t, res.Output, "robots.txt disallows "+srv.URL+"/private/members", `the path "/private/members"`,
		`group "User-agent: polly"`, srv.URL+"/robots.txt", "do not fetch this page another way")
	res = webCall(t, extract, map[string]any{"url": srv.URL + "/run.cgi", "selector": "p"})
	webHas(t, res.Output, "robots.txt disallows", `the path "/run.cgi"`)
	// The longer Allow wins; "$" anchors.
	for _, p := range []string{"/private/open/page", "/run.cgi/x"} {
		if res := webCall(t, fetch, map[string]string{"url": srv.URL + p}); res.IsError {
			t.Errorf("%s: %s", p, res.Output)
		}
	}
	// Another agent falls under "User-agent: *", which disallows everything.
	other, _ := webTools(WebOptions{RespectRobots: true, UserAgent: "OtherBot/1.0"})
	res = webCall(t, other, map[string]string{"url": srv.URL + "/dir/list"})
	webHas(t, res.Output, `the path "/dir/list"`, `group "User-agent: *"`)
	// Off: everything is fetched.
	off, _ := webTools(WebOptions{RespectRobots: false})
	if res := webCall(t, off, map[string]string{"url": srv.URL + "/private/members"}); res.IsError {
		t.Fatalf("robots off: %s", res.Output)
	}
}

// robotsSite serves robots.txt with the given status and counts the
// requests for robots.txt and for pages.
func robotsSite(t *testing.T, status int) (srv *httptest.Server, robotsHits, pageHits *atomic.Int64) {
	robotsHits, pageHits = new(atomic.Int64), new(atomic.Int64)
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		robotsHits.Add(1)
		http.Error(w, "robots says "+http.StatusText(status), status)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { pageHits.Add(1); io.WriteString(w, "ok") })
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, robotsHits, pageHits
}

// RFC 9309 §2.3.1.4: a server error on robots.txt disallows the whole site
// (fail closed); concurrent calls share one robots.txt fetch.
func TestFetchRobotsServerErrorDisallows(t *testing.T) {
	srv, robotsHits, pageHits := robotsSite(t, http.StatusInternalServerError)
	fetch, _ := webTools(WebOptions{RespectRobots: true})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			res := webCall(t, fetch, map[string]string{"url": srv.URL + fmt.Sprintf("/p%d", i)})
			if !res.IsError || !strings.Contains(res.Output, srv.URL+"/robots.txt answered HTTP 500 (a server error)") ||
				!strings.Contains(res.Output, "whole site as disallowed") || !strings.Contains(res.Output, "do not fetch this page another way") {
				t.Errorf("a robots.txt answering 500 must disallow: %s", res.Output)
			}
		})
	}
	wg.Wait()
	if robotsHits.Load() != 1 {
		t.Errorf("robots.txt fetched %d times, want once", robotsHits.Load())
	}
	if pageHits.Load() != 0 {
		t.Errorf("the site received %d page request(s) though its robots.txt answered 500", pageHits.Load())
	}
	// Turned off, the same site is fetched.
	off, _ := webTools(WebOptions{RespectRobots: false})
	if res := webCall(t, off, map[string]string{"url": srv.URL + "/p"}); res.IsError || pageHits.Load() != 1 {
		t.Errorf("robots off: %s (page hits %d)", res.Output, pageHits.Load())
	}
}

// RFC 9309 §2.3.1.3: a 4xx (404 included) means there are no rules.
func TestFetchRobotsClientErrorAllows(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusForbidden, http.StatusGone} {
		srv, robotsHits, pageHits := robotsSite(t, status)
		fetch, _ := webTools(WebOptions{RespectRobots: true})
		for _, p := range []string{"/a", "/b"} {
			if res := webCall(t, fetch, map[string]string{"url": srv.URL + p}); res.IsError {
				t.Errorf("robots.txt %d: %s: %s", status, p, res.Output)
			}
		}
		if robotsHits.Load() != 1 || pageHits.Load() != 2 {
			t.Errorf("robots.txt %d: robots hits %d (want 1, cached), page hits %d (want 2)", status, robotsHits.Load(), pageHits.Load())
		}
	}
}

// RFC 9309 §2.3.1.4: an unreachable robots.txt disallows; nothing is fetched.
func TestFetchRobotsUnreachableDisallows(t *testing.T) {
	var pageHits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			// Cut the connection without an answer.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		pageHits.Add(1)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	fetch, _ := webTools(WebOptions{RespectRobots: true})
	res := webCall(t, fetch, map[string]string{"url": srv.URL + "/page"})
	if !res.IsError || !strings.Contains(res.Output, srv.URL+"/robots.txt could not be read") || pageHits.Load() != 0 {
		t.Errorf("unreachable robots.txt: page hits %d, %s", pageHits.Load(), res.Output)
	}
}

func TestRobotsMatching(t *testing.T) {
	policy := robotsPolicyFrom(200, []byte("User-agent: polly\nUser-agent: other\nDisallow: /a\nAllow: /a/b\nDisallow: /*.pdf$\nDisallow:\n"+
		"User-agent: *\nDisallow: /\n\nuser-agent: POLLY\ndisallow: /merged\n"), nil, "polly")
	if policy.groupName() != "User-agent: polly" {
		t.Errorf("group %q", policy.groupName())
	}
	for path, allowed := range map[string]bool{
		"/":           true,
		"/a":          false,
		"/abc":        false,
		"/a/b/c":      true,
		"/x.pdf":      false,
		"/x.pdf?y=1":  true,
		"/merged/x":   false,
		"/robots.txt": true,
	} {
		if got := policy.allows(path); got != allowed {
			t.Errorf("%s: allowed=%v, want %v", path, got, allowed)
		}
	}
	// An empty file and a 4xx allow; a 5xx and a file the parser rejects disallow.
	for _, c := range []struct {
		status  int
		body    string
		allowed bool
		why     string
	}{
		{200, "", true, ""},
		{404, "", true, ""},
		{401, "", true, ""},
		{503, "", false, "answered HTTP 503"},
		{200, "Disallow: /x\nUser-agent: *\nAllow: /\n", false, "could not be parsed"},
	} {
		p := robotsPolicyFrom(c.status, []byte(c.body), nil, "polly")
		if p.allows("/page") != c.allowed || !strings.Contains(p.closedWhy, c.why) {
			t.Errorf("%d %q: allowed=%v why=%q", c.status, c.body, p.allows("/page"), p.closedWhy)
		}
	}
}

func TestParseWebURL(t *testing.T) {
	for raw, want := range map[string]string{
		"file:///etc/passwd":            "use read_file",
		"javascript:alert(1)":           "javascript: scheme; only http and https",
		"data:text/html,<b>x</b>":       "data: scheme",
		"ftp://ftp.example.com/x":       "ftp: scheme",
		"http://exa mple.com/":          "contains a space",
		"https://":                      "has no host",
		"http:///path":                  "has no host",
		"example.com/page":              "no scheme; give an absolute URL such as https://example.com/page",
		"http://[::1":                   "is malformed",
		"":                              "url is empty",
		"https://example.com/a\x00b":    "control character",
		"http://example.com:99999999/x": "is malformed",
	} {
		_, err := parseWebURL(raw)
		if err == nil {
			t.Errorf("%q accepted", raw)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", raw, err, want)
		}
	}
	if u, err := parseWebURL(" HTTPS://Example.com/a#frag "); err != nil || u.String() != "https://Example.com/a" {
		t.Errorf("ok URL: %v %v", u, err)
	}
}

func TestFetchRefusesBadURLsBeforeAsking(t *testing.T) {
	fetch, _ := webTools(WebOptions{})
	asked := 0
	gate := webGateFunc(func(context.Context, string, Access) error { asked++; return nil })
	for _, raw := range []string{"file:///etc/passwd", "javascript:alert(document.cookie)", "http://bad host/"} {
		res := NewRegistry(fetch).Execute(context.Background(), chat.ToolCall{Name: "fetch_url", Arguments: fmt.Sprintf(`{"url": %q}`, raw)}, Exec{Gate: gate})
		if !res.IsError || !strings.HasPrefix(res.Output, "error: fetch_url: ") {
			t.Errorf("%q: %s", raw, res.Output)
		}
	}
	if asked != 0 {
		t.Errorf("the gate was asked %d times for invalid URLs", asked)
	}
}

type webGateFunc func(context.Context, string, Access) error

func (g webGateFunc) Allow(ctx context.Context, tool string, a Access) error { return g(ctx, tool, a) }

func TestWebAccess(t *testing.T) {
	fetch, extract := webTools(WebOptions{})
	a, err := fetch.Access(context.Background(), json.RawMessage(`{"url":"https://shop.example.com/x?y=1#top"}`))
	if err != nil || a.Kind != AccessNetwork || a.URL != "https://shop.example.com/x?y=1" || a.Preview != a.URL {
		t.Errorf("fetch access %+v %v", a, err)
	}
	a, err = extract.Access(context.Background(), json.RawMessage(`{"html":"<p>x</p>","selector":"p"}`))
	if err != nil || a.Kind != AccessRead {
		t.Errorf("extract html access %+v %v", a, err)
	}
}

// serveOn starts a test server on a given loopback address.
func serveOn(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// Fail closed (issue 17): a redirect to a host the gate was never asked
// about is asked about; refused, the new host receives nothing (not even
// a robots.txt request).
func TestFetchRechecksRedirectTargets(t *testing.T) {
	var otherHits atomic.Int64
	other := serveOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		fmt.Fprint(w, "<html><title>other</title><p>secret</p></html>")
	}))
	first := serveOn(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/landing", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/final":
			fmt.Fprint(w, "<html><title>final</title><p>same host</p></html>")
		default:
			http.NotFound(w, r)
		}
	}))
	fetch, _ := webTools(WebOptions{})

	var mu sync.Mutex
	var asked []string
	run := func(url string, allowOther bool) Result {
		gate := webGateFunc(func(_ context.Context, tool string, a Access) error {
			mu.Lock()
			asked = append(asked, tool+" "+a.URL)
			mu.Unlock()
			if strings.HasPrefix(a.URL, other.URL) && !allowOther {
				return &Denied{Reason: "the user denied fetch_url (the host 127.0.0.2)"}
			}
			return nil
		})
		return NewRegistry(fetch).Execute(context.Background(), chat.ToolCall{ID: "1", Name: "fetch_url", Arguments: fmt.Sprintf(`{"url": %q}`, url)}, Exec{Gate: gate})
	}

	res := run(first.URL+"/away", false)
	if !res.IsError || !strings.Contains(res.Output, "refused a redirect to another host") || !strings.Contains(res.Output, "permission denied") {
		t.Fatalf("redirect to a new host: %s", res.Output)
	}
	if n := otherHits.Load(); n != 0 {
		t.Fatalf("the redirect target received %d request(s) after the gate refused", n)
	}
	if want := []string{"fetch_url " + first.URL + "/away", "fetch_url " + other.URL + "/landing"}; strings.Join(asked, "|") != strings.Join(want, "|") {
		t.Fatalf("gate asked %q, want %q", asked, want)
	}

	// Approved, the redirect is followed.
	asked = nil
	res = run(first.URL+"/away", true)
	if res.IsError || !strings.Contains(res.Output, "secret") || otherHits.Load() == 0 {
		t.Fatalf("approved redirect: %s", res.Output)
	}
	// A redirect within the same host is not asked again.
	asked = nil
	res = run(first.URL+"/here", false)
	if res.IsError || !strings.Contains(res.Output, "same host") || len(asked) != 1 {
		t.Fatalf("same-host redirect: asked %q, %s", asked, res.Output)
	}
}

// A tool run outside Registry.Execute has no gate to ask: a redirect to
// another host is refused.
func TestRedirectWithoutGateIsRefused(t *testing.T) {
	var hits atomic.Int64
	other := serveOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	first := serveOn(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/x", http.StatusFound)
	}))
	w := newWebFetcher(WebOptions{})
	_, err := w.fetch(context.Background(), first.URL+"/")
	if err == nil || !strings.Contains(err.Error(), "no permission policy") || hits.Load() != 0 {
		t.Fatalf("err = %v, hits %d", err, hits.Load())
	}
}

// robots.txt redirecting to another host goes through the gate too; refused,
// the other host receives nothing and robots.txt counts as unreachable, so
// the page is not fetched (RFC 9309: unreachable disallows).
func TestRobotsRedirectRechecked(t *testing.T) {
	var otherHits, pageHits atomic.Int64
	other := serveOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { otherHits.Add(1) }))
	first := serveOn(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.Redirect(w, r, other.URL+"/robots.txt", http.StatusMovedPermanently)
			return
		}
		pageHits.Add(1)
	}))
	fetch, _ := webTools(WebOptions{RespectRobots: true})
	var asked []string
	gate := webGateFunc(func(_ context.Context, tool string, a Access) error {
		asked = append(asked, a.URL)
		if strings.HasPrefix(a.URL, other.URL) {
			return &Denied{Reason: "the user denied fetch_url (the host 127.0.0.2)"}
		}
		return nil
	})
	res := NewRegistry(fetch).Execute(context.Background(), chat.ToolCall{ID: "1", Name: "fetch_url", Arguments: fmt.Sprintf(`{"url": %q}`, first.URL+"/page")}, Exec{Gate: gate})
	if !res.IsError || !strings.Contains(res.Output, "could not be read") || !strings.Contains(res.Output, "refused a redirect to another host") {
		t.Fatalf("robots.txt redirect refused: %s", res.Output)
	}
	if otherHits.Load() != 0 || pageHits.Load() != 0 {
		t.Fatalf("other host hits %d, page hits %d; want 0 and 0", otherHits.Load(), pageHits.Load())
	}
	if want := first.URL + "/page|" + other.URL + "/robots.txt"; strings.Join(asked, "|") != want {
		t.Fatalf("gate asked %q, want %q", asked, want)
	}
}
