package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"codeberg.org/readeck/go-readability/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

const (
	webDefaultTimeout  = 30 * time.Second
	webDefaultMaxBytes = 5 << 20
	webMaxRedirects    = 5
	webConnectTimeout  = 10 * time.Second
	webErrorPageMax    = 4 << 10 // an error page is mostly boilerplate
	sniffLen           = 512     // what http.DetectContentType looks at
	readabilityMaxElem = 60000   // larger pages skip readability: it is slow on them
	// The readable part must keep this share of the page's text, else it
	// dropped content (a directory's link list looks like boilerplate to it).
	readableShare = 0.4
	// A page with this many links (navigation removed) may be a listing:
	// readability must keep half of them.
	minLinksForListing = 10
)

// WebOptions configure fetch_url and extract.
type WebOptions struct {
	UserAgent     string        // sent with every request; its product token ("Polly") is matched in robots.txt
	Timeout       time.Duration // whole request, connect to last body byte (default 30 s)
	MaxBytes      int64         // body cap; more is cut, never read (default 5 MiB)
	RespectRobots bool          // check robots.txt before each fetch (the config default is on)
	HTTPClient    *http.Client  // tests: its Transport is used; Jar, Timeout and CheckRedirect are replaced
	Now           func() time.Time
}

// WebTools returns fetch_url and extract. They share one HTTP client and
// one robots.txt cache.
func WebTools(opts WebOptions) []Tool {
	w := newWebFetcher(opts)
	return []Tool{fetchURLTool(w), extractTool(w)}
}

// webFetcher is the HTTP side shared by the web tools.
type webFetcher struct {
	opts         WebOptions
	client       *http.Client // redirects checked (limit, scheme, robots)
	robotsClient *http.Client // redirects limited only
	robots       *robotsCache
	token        string // robots.txt product token, lower case
}

func newWebFetcher(opts WebOptions) *webFetcher {
	if opts.Timeout <= 0 {
		opts.Timeout = webDefaultTimeout
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = webDefaultMaxBytes
	}
	if strings.TrimSpace(opts.UserAgent) == "" {
		opts.UserAgent = "Polly/dev (terminal coding agent)"
	}
	w := &webFetcher{opts: opts, robots: &robotsCache{m: map[string]*robotsEntry{}}, token: productToken(opts.UserAgent)}
	if w.token == "" {
		w.token = "polly"
	}
	var c http.Client
	if opts.HTTPClient != nil {
		c = *opts.HTTPClient
	} else {
		dial := &net.Dialer{Timeout: min(webConnectTimeout, opts.Timeout), KeepAlive: 30 * time.Second}
		c.Transport = &http.Transport{
			Proxy:                  http.ProxyFromEnvironment,
			DialContext:            dial.DialContext,
			ForceAttemptHTTP2:      true,
			TLSHandshakeTimeout:    min(webConnectTimeout, opts.Timeout),
			ResponseHeaderTimeout:  opts.Timeout,
			ExpectContinueTimeout:  time.Second,
			IdleConnTimeout:        90 * time.Second,
			MaxIdleConns:           16,
			MaxResponseHeaderBytes: 1 << 20,
			// DisableCompression stays false: the transport asks for gzip and
			// inflates it, so the byte cap applies to the inflated page.
		}
	}
	c.Jar = nil // a fresh jar per call (fetch), so no cookie outlives one fetch
	c.Timeout = 0
	w.client, w.robotsClient = &c, new(http.Client)
	*w.robotsClient = c
	w.client.CheckRedirect = w.checkRedirect
	w.robotsClient.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > webMaxRedirects {
			return redirectErr(req, via)
		}
		return recheckRedirect(req, via)
	}
	return w
}

func (w *webFetcher) now() time.Time {
	if w.opts.Now != nil {
		return w.opts.Now()
	}
	return time.Now()
}

// RedirectError is a redirect chain that was not followed to its end.
type RedirectError struct {
	Chain  []string // every URL requested, then the one refused
	Loop   bool     // a URL repeats
	Reason string
}

func (e *RedirectError) Error() string {
	chain := e.Chain
	if len(chain) > 8 {
		chain = append(append(chain[:3:3], "…"), chain[len(chain)-3:]...)
	}
	s := e.Reason + ": " + strings.Join(chain, " → ")
	if e.Loop {
		s += " (a redirect loop: the same URL comes back; the site may need cookies or a login)"
	}
	return s
}

func redirectErr(req *http.Request, via []*http.Request) error {
	e := &RedirectError{Reason: fmt.Sprintf("stopped after %d redirects", webMaxRedirects)}
	seen := map[string]bool{}
	for _, r := range append(via, req) {
		u := r.URL.String()
		e.Loop = e.Loop || seen[u]
		seen[u] = true
		e.Chain = append(e.Chain, u)
	}
	return e
}

func (w *webFetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > webMaxRedirects {
		return redirectErr(req, via)
	}
	if s := req.URL.Scheme; s != "http" && s != "https" {
		e := redirectErr(req, via).(*RedirectError)
		e.Reason, e.Loop = fmt.Sprintf("refused a redirect to a %s: URL (only http and https are fetched)", s), false
		return e
	}
	// The gate first: the robots.txt check would already contact the new host.
	if err := recheckRedirect(req, via); err != nil {
		return err
	}
	return w.checkRobots(req.Context(), req.URL)
}

// recheckRedirect asks the permission gate about a redirect to a host the
// chain has not visited: approving example.com is no approval of wherever
// example.com redirects to.
func recheckRedirect(req *http.Request, via []*http.Request) error {
	for _, r := range via {
		if strings.EqualFold(r.URL.Host, req.URL.Host) {
			return nil
		}
	}
	from := via[len(via)-1].URL.String()
	err := recheck(req.Context(), Access{Kind: AccessNetwork, URL: req.URL.String(),
		Preview: "redirect from " + from + " to " + req.URL.String()})
	if err == nil {
		return nil
	}
	e := redirectErr(req, via).(*RedirectError)
	e.Reason, e.Loop = "refused a redirect to another host ("+err.Error()+")", false
	return e
}

// parseWebURL accepts absolute http and https URLs only and says what is
// wrong with anything else.
func parseWebURL(raw string) (*url.URL, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return nil, errors.New("url is empty; give an absolute http or https URL")
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
		return nil, fmt.Errorf("url %q contains a space or control character at byte %d; percent-encode it (a space is %%20)", s, i)
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("url %q is malformed: %v", s, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		hint := strings.TrimLeft(s, "/:")
		return nil, fmt.Errorf("url %q has no scheme; give an absolute URL such as https://%s", s, hint)
	case "file":
		return nil, fmt.Errorf("file: URLs are not fetched (%q); use read_file for local files", s)
	default:
		return nil, fmt.Errorf("url %q uses the %s: scheme; only http and https URLs can be fetched", clip(s, 80), strings.ToLower(u.Scheme))
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("url %q has no host; give an absolute URL such as https://example.com/page", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("url %q is malformed: port %s is out of range", s, p)
		}
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Fragment, u.RawFragment = "", "" // never sent; keeps robots and messages clean
	return u, nil
}

// contentKind is how a response body is handled.
type contentKind int

const (
	kindBinary contentKind = iota
	kindHTML
	kindJSON
	kindText
	kindSniff // unknown or missing type: decide from the bytes
)

func classifyType(mt string) contentKind {
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return kindHTML
	case mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json"):
		return kindJSON
	case strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+xml") || strings.HasSuffix(mt, "/xml"):
		return kindText
	case strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "video/"),
		strings.HasPrefix(mt, "font/"), strings.HasPrefix(mt, "model/"), strings.HasPrefix(mt, "multipart/"):
		return kindBinary
	}
	switch mt {
	case "", "application/unknown", "application/x-unknown", "unknown/unknown":
		return kindSniff
	case "application/javascript", "application/x-javascript", "application/ecmascript", "application/x-ndjson",
		"application/yaml", "application/x-yaml", "application/toml", "application/csv", "application/sql",
		"application/graphql", "application/x-sh", "application/x-www-form-urlencoded", "application/x-subrip":
		return kindText
	case "application/octet-stream", "binary/octet-stream", "application/pdf", "application/zip", "application/gzip",
		"application/x-gzip", "application/x-tar", "application/x-bzip2", "application/x-xz", "application/x-7z-compressed",
		"application/vnd.rar", "application/x-rar-compressed", "application/java-archive", "application/wasm",
		"application/msword", "application/x-msdownload", "application/x-sqlite3", "application/x-protobuf",
		"application/vnd.android.package-archive", "application/x-apple-diskimage", "application/x-iso9660-image":
		return kindBinary
	}
	if strings.HasPrefix(mt, "application/vnd.ms-") || strings.HasPrefix(mt, "application/vnd.openxmlformats") ||
		strings.HasPrefix(mt, "application/vnd.oasis.opendocument") {
		return kindBinary
	}
	return kindSniff
}

// webPage is a fetched response, body decoded to UTF-8 unless binary.
type webPage struct {
	requested   string
	url         *url.URL // final, after redirects
	status      string   // "200 OK"
	code        int
	contentType string // as sent
	mediaType   string // parsed, lower case; sniffed when none was sent
	kind        contentKind
	body        []byte
	rawSize     int64  // bytes read from the wire (after gzip)
	total       int64  // Content-Length, -1 when unknown
	truncated   bool   // cut at MaxBytes
	decodedFrom string // charset converted to UTF-8, "" when none was needed
}

// BinaryContentError says a URL serves something fetch_url cannot show.
type BinaryContentError struct {
	URL, Type, Sniffed string
}

func (e *BinaryContentError) Error() string {
	t := e.Type
	if t == "" {
		t = "no declared type"
	}
	if e.Sniffed != "" && e.Sniffed != e.Type {
		t += fmt.Sprintf(", content looks like %s", e.Sniffed)
	}
	hint := ""
	if strings.Contains(e.Type+e.Sniffed, "pdf") {
		hint = "; to read a PDF, download it with run_command (curl -o file.pdf URL) and convert it (pdftotext) if the user agrees"
	}
	return fmt.Sprintf("refused: %s is binary content (%s); fetch_url and extract read only HTML, JSON and text%s", e.URL, t, hint)
}

// fetch GETs rawURL through the robots check, the redirect policy, the
// deadline and the byte cap.
func (w *webFetcher) fetch(ctx context.Context, rawURL string) (*webPage, error) {
	u, err := parseWebURL(rawURL)
	if err != nil {
		return nil, err
	}
	if err := w.checkRobots(ctx, u); err != nil {
		return nil, err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build request for %s: %w", u, err)
	}
	req.Header.Set("User-Agent", w.opts.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/json;q=0.9,text/*;q=0.8,*/*;q=0.5")
	req.Header.Set("Accept-Language", "en;q=0.9,*;q=0.5")
	c := *w.client
	// Sites that set a cookie and redirect back (consent pages) need a jar;
	// one per call keeps nothing between fetches.
	c.Jar, _ = cookiejar.New(nil)
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return nil, w.requestErr(parent, u, err, start, "waiting for the response", -1)
	}
	defer resp.Body.Close()

	p := &webPage{requested: u.String(), url: resp.Request.URL, status: resp.Status, code: resp.StatusCode,
		contentType: resp.Header.Get("Content-Type"), total: resp.ContentLength}
	p.mediaType, _, _ = mime.ParseMediaType(p.contentType)
	p.mediaType = strings.ToLower(p.mediaType)
	p.kind = classifyType(p.mediaType)
	if p.kind == kindBinary {
		return nil, &BinaryContentError{URL: p.url.String(), Type: p.mediaType}
	}
	counted := &countingReader{r: resp.Body}
	br := bufio.NewReaderSize(counted, sniffLen)
	// Sniff before reading on: a binary body is refused after 512 bytes,
	// and a "text/html" that is really a zip is caught too.
	head, err := br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, w.requestErr(parent, p.url, err, start, "reading the body", counted.n)
	}
	sniffed := http.DetectContentType(head)
	if !strings.HasPrefix(sniffed, "text/") {
		return nil, &BinaryContentError{URL: p.url.String(), Type: p.mediaType, Sniffed: strings.TrimSuffix(sniffed, "; charset=utf-8")}
	}
	body, truncated, err := readAtMost(br, w.opts.MaxBytes, resp.ContentLength)
	if err != nil {
		return nil, w.requestErr(parent, p.url, err, start, "reading the body", counted.n)
	}
	p.body, p.truncated, p.rawSize = body, truncated, int64(len(body))
	if p.kind == kindSniff {
		trimmed := bytes.TrimSpace(body)
		switch st, _, _ := mime.ParseMediaType(sniffed); {
		case st == "text/html":
			p.kind, p.mediaType = kindHTML, st
		case len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed):
			p.kind, p.mediaType = kindJSON, "application/json"
		default:
			p.kind, p.mediaType = kindText, st
		}
	}
	p.body, p.decodedFrom = toUTF8(p.body, p.contentType, p.truncated)
	return p, nil
}

// requestErr turns a client error into a message that says what happened.
func (w *webFetcher) requestErr(parent context.Context, u *url.URL, err error, start time.Time, phase string, got int64) error {
	var re *RedirectError
	var rd *RobotsDeniedError
	switch {
	case errors.As(err, &rd):
		return rd
	case errors.As(err, &re):
		return re
	case parent.Err() != nil:
		return fmt.Errorf("fetch %s: cancelled", u)
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		recv := ""
		if got >= 0 {
			recv = fmt.Sprintf("; %s received", humanSize(got))
		}
		return fmt.Errorf("fetch %s: timed out after %s %s (limit %s%s); the server is slow or not answering",
			u, time.Since(start).Round(time.Millisecond), phase, w.opts.Timeout, recv)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its text repeats the method and URL
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return fmt.Errorf("fetch %s: cannot resolve host %q: %v", u, dns.Name, dns.Err)
	}
	return fmt.Errorf("fetch %s: %s: %w", u, phase, err)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// readAtMost reads up to limit bytes and reports whether more followed; it
// reads at most one byte past the limit, so a huge body costs no more.
func readAtMost(r io.Reader, limit, hint int64) ([]byte, bool, error) {
	size := int64(64 << 10)
	if hint > 0 {
		size = hint + 1 // a Content-Length lets one allocation do
	}
	buf := make([]byte, 0, min(size, limit+1))
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return buf[:limit], true, nil
			}
			grown := make([]byte, len(buf), min(int64(cap(buf))*2, limit+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			if int64(len(buf)) > limit {
				return buf[:limit], true, nil
			}
			return buf, false, nil
		}
		if err != nil {
			return buf, false, err
		}
	}
}

// toUTF8 converts body to UTF-8. A BOM or a charset in the Content-Type
// decides; otherwise a body that is valid UTF-8 is UTF-8 (the <meta> prescan
// only sees 1 KB and guesses windows-1252 without one), else the <meta>
// charset or windows-1252, as browsers do.
func toUTF8(body []byte, contentType string, truncated bool) ([]byte, string) {
	enc, name, certain := charset.DetermineEncoding(body, contentType)
	if name == "utf-8" || !certain && validUTF8(body, truncated) {
		return bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), ""
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return body, "" // undecodable: show the bytes as they are
	}
	return out, name
}

// validUTF8 is utf8.Valid, forgiving a rune split by the byte cap.
func validUTF8(b []byte, truncated bool) bool {
	if truncated {
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	return utf8.Valid(b)
}

type fetchArgs struct {
	URL string `json:"url" jsonschema:"absolute http or https URL of the page"`
}

func fetchURLTool(w *webFetcher) Tool {
	return New("fetch_url", description("fetch_url"),
		func(ctx context.Context, a fetchArgs) (Result, error) { return w.fetchURL(ctx, a.URL) }, nil).
		WithAccess(func(ctx context.Context, a fetchArgs) (Access, error) {
			u, err := parseWebURL(a.URL)
			if err != nil {
				return Access{}, err
			}
			return Access{Kind: AccessNetwork, URL: u.String(), Preview: u.String()}, nil
		})
}

func (w *webFetcher) fetchURL(ctx context.Context, rawURL string) (Result, error) {
	p, err := w.fetch(ctx, rawURL)
	if err != nil {
		return Result{}, err
	}
	var title, content, how string
	switch p.kind {
	case kindHTML:
		title, content, how, err = htmlToMarkdown(ctx, p.body, p.url)
		if err != nil {
			return Result{}, fmt.Errorf("convert %s to Markdown: %w", p.url, err)
		}
	case kindJSON:
		var buf bytes.Buffer
		if err := json.Indent(&buf, p.body, "", "  "); err != nil {
			content, how = string(p.body), fmt.Sprintf("JSON as received (not valid JSON: %v)", err)
		} else {
			content, how = buf.String(), "JSON, pretty-printed"
		}
	default:
		content, how = string(p.body), "text as received"
	}
	failed := p.code >= 400
	if failed && len(content) > webErrorPageMax {
		content = clip(content, webErrorPageMax)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "URL: %s\n", p.url)
	if p.url.String() != p.requested {
		fmt.Fprintf(&out, "Redirected from: %s\n", p.requested)
	}
	fmt.Fprintf(&out, "Status: %s\n", p.status)
	ct := p.contentType
	if ct == "" {
		ct = "(none sent; sniffed " + p.mediaType + ")"
	}
	if p.decodedFrom != "" {
		ct += " (decoded from " + p.decodedFrom + " to UTF-8)"
	}
	fmt.Fprintf(&out, "Content-Type: %s\n", ct)
	size := humanSize(p.rawSize)
	if p.truncated {
		whole := "more"
		if p.total > 0 {
			whole = humanSize(p.total)
		}
		size += fmt.Sprintf(" — CUT: the page is %s, only the first %s was read; the rest is missing", whole, humanSize(w.opts.MaxBytes))
	}
	fmt.Fprintf(&out, "Size: %s\n", size)
	fmt.Fprintf(&out, "Content: %s\n\n", how)
	// What the page says — its title too — is the page's, not Polly's.
	page := content
	if title != "" {
		page = "Title: " + title + "\n\n" + content
	}
	source := p.url.String()
	out.WriteString(Envelope(source, page))
	out.WriteByte('\n')
	if failed {
		return Result{Output: "error: the server answered " + p.status + "\n" + out.String(), IsError: true, Untrusted: source}, nil
	}
	return Result{Output: out.String(), Meta: map[string]any{"url": source, "status": p.code}, Untrusted: source}, nil
}

// htmlToMarkdown renders the readable part of a page, or the whole page
// without its navigation when readability keeps too little of it.
func htmlToMarkdown(ctx context.Context, body []byte, pageURL *url.URL) (title, md, how string, err error) {
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return "", "", "", fmt.Errorf("parse HTML: %w", err)
	}
	baseURL := documentBase(doc, pageURL)
	// Text a browser would not show goes first (while the page's <style>
	// sheets are there to say what they hide), then navigation, so neither
	// readability nor the whole-page fallback keeps either. Scripts stay
	// for readability's JSON-LD metadata; the converter drops them.
	stripHidden(doc)
	stripBoilerplate(doc)
	art, artErr := readable(doc, baseURL)
	pageText := textLen(doc)
	node, how := doc, "whole page as Markdown, navigation and footer removed (no main article found)"
	if artErr == nil && art.Node != nil {
		how = "whole page as Markdown, navigation and footer removed (the main-article view dropped too much of it)"
	}
	heading := ""
	pageLinks := countElements(doc, atom.A)
	if artErr == nil && art.Node != nil {
		n, links := textLen(art.Node), countElements(art.Node, atom.A)
		// Readability scores link lists as boilerplate; on a directory the
		// list is the content, so losing most links means falling back.
		if n > 0 && float64(n) >= readableShare*float64(pageText) && (pageLinks < minLinksForListing || 2*links >= pageLinks) {
			node, how = art.Node, "main content as Markdown (readability)"
			// Readability drops an <h1> that repeats the <title>; the page's
			// heading orients the reader, so put it back.
			if h := findElement(doc, atom.H1); h != nil && findElement(art.Node, atom.H1) == nil {
				heading = nodeText(h)
			}
		}
	}
	title = collapseSpace(art.Title())
	if title == "" {
		title = docTitle(doc)
	}
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(table.WithCellPaddingBehavior(table.CellPaddingBehaviorMinimal), table.WithSkipEmptyRows(true)),
	))
	out, err := conv.ConvertNode(node, converter.WithDomain(baseURL.String()), converter.WithContext(ctx))
	if err != nil {
		return "", "", "", err
	}
	md = strings.TrimSpace(blankRuns().ReplaceAllString(string(out), "\n\n"))
	if heading != "" && !strings.Contains(md, heading) {
		md = "# " + heading + "\n\n" + md
	}
	return title, md, how, nil
}

var blankRuns = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\n[ \t]*(\n[ \t]*)+\n`) })

// readable runs readability, which has panicked on odd pages: a panic
// means "nothing found", not a failed fetch.
func readable(doc *html.Node, pageURL *url.URL) (art readability.Article, err error) {
	defer func() {
		if p := recover(); p != nil {
			art, err = readability.Article{}, fmt.Errorf("readability: %v", p)
		}
	}()
	ps := readability.NewParser()
	ps.MaxElemsToParse = readabilityMaxElem
	return ps.ParseDocument(doc, pageURL) // works on a copy
}

// documentBase is the URL relative links resolve against: the page URL,
// or its <base href>.
func documentBase(doc *html.Node, pageURL *url.URL) *url.URL {
	if n := findElement(doc, atom.Base); n != nil {
		if href := attrOf(n, "href"); href != "" {
			if b, err := pageURL.Parse(strings.TrimSpace(href)); err == nil && (b.Scheme == "http" || b.Scheme == "https") {
				return b
			}
		}
	}
	return pageURL
}

func findElement(n *html.Node, a atom.Atom) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := findElement(c, a); f != nil {
			return f
		}
	}
	return nil
}

func attrOf(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

func docTitle(doc *html.Node) string {
	for _, a := range []atom.Atom{atom.Title, atom.H1} {
		if n := findElement(doc, a); n != nil {
			if t := nodeText(n); t != "" {
				return t
			}
		}
	}
	return ""
}

// boilerplate are elements that never hold a page's content.
var boilerplate = map[atom.Atom]bool{
	atom.Style: true, atom.Svg: true,
	atom.Canvas: true, atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Nav: true,
	atom.Footer: true, atom.Aside: true, atom.Button: true, atom.Select: true, atom.Dialog: true,
}

// stripBoilerplate removes navigation, footers and styles (stripHidden
// removed the hidden parts).
func stripBoilerplate(n *html.Node) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode && isBoilerplate(c) {
			n.RemoveChild(c)
		} else {
			stripBoilerplate(c)
		}
		c = next
	}
}

func isBoilerplate(n *html.Node) bool {
	if boilerplate[n.DataAtom] {
		return true
	}
	switch strings.ToLower(attrOf(n, "role")) {
	case "navigation", "contentinfo", "dialog", "alertdialog", "menubar":
		return true
	}
	return false
}

func countElements(n *html.Node, a atom.Atom) int {
	count := 0
	if n.Type == html.ElementNode && n.DataAtom == a {
		count++
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		count += countElements(c, a)
	}
	return count
}

// textLen counts the non-space characters of a subtree's text.
func textLen(n *html.Node) int {
	count := 0
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			for _, r := range n.Data {
				if r > ' ' {
					count++
				}
			}
		case html.ElementNode:
			if n.DataAtom == atom.Script || n.DataAtom == atom.Style {
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return count
}

// blockLevel elements separate words even when the markup has no space
// between them ("<li>A</li><li>B</li>" reads "A B", not "AB").
var blockLevel = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true, atom.Br: true, atom.Dd: true,
	atom.Div: true, atom.Dl: true, atom.Dt: true, atom.Figcaption: true, atom.Figure: true, atom.Footer: true,
	atom.Form: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Header: true, atom.Hr: true, atom.Li: true, atom.Main: true, atom.Nav: true, atom.Ol: true, atom.P: true,
	atom.Pre: true, atom.Section: true, atom.Table: true, atom.Td: true, atom.Th: true, atom.Tr: true, atom.Ul: true,
}

// nodeText is the visible text of a subtree, whitespace collapsed.
func nodeText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			b.WriteString(n.Data)
			return
		case html.ElementNode:
			switch n.DataAtom {
			case atom.Script, atom.Style, atom.Noscript, atom.Template:
				return
			}
			if blockLevel[n.DataAtom] {
				b.WriteByte(' ')
				defer b.WriteByte(' ')
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return collapseSpace(b.String())
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }
