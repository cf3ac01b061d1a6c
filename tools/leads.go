package tools

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"

	"polly/memory/store"
)

// LeadStore is what the lead tools need; *store.Store satisfies it.
type LeadStore interface {
	// SaveLeads stores a batch in one transaction and says, per lead,
	// whether it was new or merged into an existing one.
	SaveLeads(ctx context.Context, leads []store.Lead) ([]store.LeadOutcome, error)
	Leads(ctx context.Context, list string) ([]store.Lead, error)
}

// leadLister is optional: with it, errors name the lists that exist.
type leadLister interface {
	LeadLists(ctx context.Context) ([]store.LeadList, error)
}

const (
	leadsMaxBatch   = 500
	leadMaxField    = 500
	leadMaxNotes    = 2000
	leadListMaxName = 100
)

// LeadsCSVHeader is the column order of an exported lead list.
var LeadsCSVHeader = []string{"list", "company", "website", "domain", "contact_name", "title", "email", "phone",
	"source_url", "notes", "created_at", "updated_at"}

type leadArg struct {
	Company     string `json:"company,omitempty" jsonschema:"company name as written on the source page"`
	Website     string `json:"website,omitempty" jsonschema:"the company's own website (URL or domain), not a social or directory profile"`
	ContactName string `json:"contact_name,omitempty" jsonschema:"a person's full name"`
	Title       string `json:"title,omitempty" jsonschema:"the person's job title"`
	Email       string `json:"email,omitempty" jsonschema:"email address exactly as published"`
	Phone       string `json:"phone,omitempty" jsonschema:"phone number as published"`
	SourceURL   string `json:"source_url,omitempty" jsonschema:"REQUIRED for every lead: the http(s) URL of the page where this data was found"`
	Notes       string `json:"notes,omitempty" jsonschema:"anything else worth keeping (industry, size, address, profile links)"`
}

type leadsSaveArgs struct {
	Leads []leadArg `json:"leads" jsonschema:"the leads found; each needs source_url and a website or an email"`
	List  string    `json:"list" jsonschema:"name of the lead list, e.g. saas-berlin"`
}

type leadsExportArgs struct {
	List string `json:"list" jsonschema:"name of the lead list to export"`
	Path string `json:"path,omitempty" jsonschema:"CSV file to write, relative to the project root (default leads-<list>.csv)"`
}

// LeadTools returns leads_save and leads_export over st; export paths
// resolve against root.
func LeadTools(st LeadStore, root string) []Tool {
	root = filepath.Clean(root)
	save := New("leads_save", description("leads_save"),
		func(ctx context.Context, a leadsSaveArgs) (Result, error) { return saveLeads(ctx, st, a) },
		func(s *jsonschema.Schema) {
			one, leads := 1, s.Properties["leads"]
			leads.Types, leads.Type, leads.MinItems = nil, "array", &one // not ["null","array"]: null is no batch
		}).
		WithAccess(func(ctx context.Context, a leadsSaveArgs) (Access, error) {
			// The project's own store, like task_plan: nothing a person must approve.
			return Access{Kind: AccessMemory}, nil
		})
	export := New("leads_export", Describe(descriptions, "leads_export", struct{ Header string }{strings.Join(LeadsCSVHeader, ", ")}),
		func(ctx context.Context, a leadsExportArgs) (Result, error) {
			shown, n, size, err := ExportLeads(ctx, st, root, a.List, a.Path)
			if err != nil {
				return Result{}, err
			}
			return Result{Output: fmt.Sprintf("wrote %d leads of list %q to %s (%d rows with the header, %s)", n, strings.TrimSpace(a.List), shown, n+1, humanSize(size)),
				Files: []string{shown}, Meta: map[string]any{"rows": n}}, nil
		}, nil).
		WithAccess(func(ctx context.Context, a leadsExportArgs) (Access, error) {
			list, err := checkListName(a.List)
			if err != nil {
				return Access{}, err
			}
			abs := followLink(resolvePath(root, exportPath(list, a.Path)))
			return Access{Kind: AccessWrite, Paths: []string{abs},
				Preview: fmt.Sprintf("write lead list %q as CSV to %s", list, displayPath(root, abs))}, nil
		})
	return []Tool{save, export}
}

func checkListName(list string) (string, error) {
	list = strings.TrimSpace(list)
	switch {
	case list == "":
		return "", errors.New("list is empty; name the lead list, e.g. \"saas-berlin\"")
	case len(list) > leadListMaxName:
		return "", fmt.Errorf("list name is %d characters; keep it under %d", len(list), leadListMaxName)
	case strings.IndexFunc(list, unicode.IsControl) >= 0:
		return "", fmt.Errorf("list name %q contains control characters", list)
	}
	return list, nil
}

// rejection is one lead that was not saved.
type rejection struct {
	index  int
	label  string
	reason string
}

func saveLeads(ctx context.Context, st LeadStore, a leadsSaveArgs) (Result, error) {
	list, err := checkListName(a.List)
	if err != nil {
		return Result{}, err
	}
	if len(a.Leads) == 0 {
		return Result{}, errors.New("leads is empty; nothing to save")
	}
	if len(a.Leads) > leadsMaxBatch {
		return Result{}, fmt.Errorf("%d leads in one call; send at most %d per call", len(a.Leads), leadsMaxBatch)
	}
	var ok []store.Lead
	var okIndex []int
	var rejected []rejection
	for i, in := range a.Leads {
		l, err := checkLead(list, in)
		if err != nil {
			rejected = append(rejected, rejection{i, leadLabel(in.Company, in.ContactName, in.Email, in.Website), err.Error()})
			continue
		}
		ok = append(ok, l)
		okIndex = append(okIndex, i)
	}
	var outcomes []store.LeadOutcome
	if len(ok) > 0 {
		if outcomes, err = st.SaveLeads(ctx, ok); err != nil {
			return Result{}, fmt.Errorf("save %d leads to list %q (nothing was saved): %w", len(ok), list, err)
		}
	}

	saved, merged := 0, 0
	var mergeLines []string
	firstIndex := map[int64]int{} // row id → the index in this call that created it
	for k, o := range outcomes {
		i, l := okIndex[k], store.NormalizeLead(ok[k])
		if !o.Merged {
			saved++
			firstIndex[o.ID] = i
			continue
		}
		merged++
		into := fmt.Sprintf("existing lead #%d", o.ID)
		if j, ok := firstIndex[o.ID]; ok {
			into = fmt.Sprintf("leads[%d] of this call (#%d)", j, o.ID)
		}
		what := "nothing new"
		if len(o.Changed) > 0 {
			what = "updated " + strings.Join(o.Changed, ", ")
		}
		mergeLines = append(mergeLines, fmt.Sprintf("- leads[%d] (%s) is a duplicate (same domain %q and email %q): merged into %s; %s",
			i, leadLabel(l.Company, l.ContactName, l.Email, l.Website), l.Domain, l.Email, into, what))
	}

	var out strings.Builder
	fmt.Fprintf(&out, "list %q: %d saved (new), %d merged into existing leads, %d rejected", list, saved, merged, len(rejected))
	if all, err := st.Leads(ctx, list); err == nil {
		fmt.Fprintf(&out, "; the list now has %d leads", len(all))
	}
	out.WriteString(".\n")
	if len(mergeLines) > 0 {
		out.WriteString("merged:\n" + strings.Join(mergeLines, "\n") + "\n")
	}
	if len(rejected) > 0 {
		out.WriteString("rejected (not saved; fix them from the source page and send them again, or drop them):\n")
		for _, r := range rejected {
			fmt.Fprintf(&out, "- leads[%d] (%s): %s\n", r.index, r.label, r.reason)
		}
	}
	return Result{Output: out.String(), IsError: len(ok) == 0,
		Meta: map[string]any{"saved": saved, "merged": merged, "rejected": len(rejected)}}, nil
}

func leadLabel(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			keep = append(keep, clipRunes(p, 60))
		}
		if len(keep) == 2 {
			break
		}
	}
	if len(keep) == 0 {
		return "no name"
	}
	return strings.Join(keep, ", ")
}

func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// notCompanySites are hosts of profiles and directories: as a "website"
// they would make every company listed there one duplicate.
var notCompanySites = map[string]bool{
	"linkedin.com": true, "facebook.com": true, "instagram.com": true, "twitter.com": true, "x.com": true,
	"youtube.com": true, "tiktok.com": true, "crunchbase.com": true, "xing.com": true, "glassdoor.com": true,
	"yelp.com": true, "zoominfo.com": true, "bit.ly": true, "linktr.ee": true,
}

// checkLead validates and cleans one lead; the error is the reason it is
// rejected.
func checkLead(list string, in leadArg) (store.Lead, error) {
	l := store.Lead{List: list, Company: oneLine(in.Company), Website: oneLine(in.Website), ContactName: oneLine(in.ContactName),
		Title: oneLine(in.Title), Phone: oneLine(in.Phone), SourceURL: oneLine(in.SourceURL), Notes: cleanText(in.Notes)}
	for _, f := range []struct{ name, v string }{{"company", l.Company}, {"website", l.Website}, {"contact_name", l.ContactName},
		{"title", l.Title}, {"phone", l.Phone}, {"source_url", l.SourceURL}, {"email", in.Email}} {
		if len(f.v) > leadMaxField {
			return l, fmt.Errorf("%s is %d characters; that is not a lead field (limit %d)", f.name, len(f.v), leadMaxField)
		}
	}
	if len(l.Notes) > leadMaxNotes {
		return l, fmt.Errorf("notes is %d characters; keep it under %d", len(l.Notes), leadMaxNotes)
	}
	if l.SourceURL == "" {
		return l, errors.New("missing source_url: every lead needs the URL of the page where its data was found; leadgen must never invent data")
	}
	if u, err := url.Parse(l.SourceURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return l, fmt.Errorf("source_url %q is not an http(s) URL; give the address of the page where this lead was found", l.SourceURL)
	}
	if in.Email != "" {
		email, err := checkEmail(in.Email)
		if err != nil {
			return l, fmt.Errorf("invalid email %q: %v", oneLine(in.Email), err)
		}
		l.Email = email
	}
	if l.Website != "" {
		d := store.NormalizeDomain(l.Website)
		switch {
		case d == "" || !strings.Contains(d, ".") && net.ParseIP(d) == nil && d != "localhost":
			return l, fmt.Errorf("website %q is not a URL or domain", l.Website)
		case notCompanySites[d]:
			return l, fmt.Errorf("website %q is a page on %s, not the company's own site; put profile links in notes and give the company's website", l.Website, d)
		}
	}
	if n := store.NormalizeLead(l); n.Domain == "" && n.Email == "" {
		return l, errors.New("needs a website or an email: the list is deduplicated by domain and email; find the company's website")
	}
	if l.Company == "" && l.ContactName == "" && l.Email == "" && l.Website == "" {
		return l, errors.New("empty lead: give at least a company, a contact name, an email or a website")
	}
	return l, nil
}

// checkEmail parses an address (net/mail) and checks that it looks
// deliverable: one plain local part, a domain with a real top-level domain.
func checkEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	if len(s) >= 7 && strings.EqualFold(s[:7], "mailto:") {
		s, _, _ = strings.Cut(s[7:], "?")
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return "", fmt.Errorf("not an email address (%v); if the page obfuscates it (\"name [at] domain\"), write it plainly", strings.TrimPrefix(err.Error(), "mail: "))
	}
	addr := strings.ToLower(a.Address)
	at := strings.LastIndexByte(addr, '@')
	local, domain := addr[:at], addr[at+1:]
	switch {
	case len(addr) > 254:
		return "", errors.New("longer than 254 characters")
	case len(local) == 0 || len(local) > 64:
		return "", errors.New("the part before @ must be 1 to 64 characters")
	case strings.ContainsAny(local, " \"(),:;<>[\\]"):
		return "", errors.New("unusual characters before @")
	case strings.HasPrefix(local, ".") || strings.HasSuffix(local, ".") || strings.Contains(local, ".."):
		return "", errors.New("misplaced dot before @")
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return "", fmt.Errorf("domain %q has no top-level domain", domain)
	}
	for _, lb := range labels {
		if lb == "" || len(lb) > 63 || lb[0] == '-' || lb[len(lb)-1] == '-' {
			return "", fmt.Errorf("domain %q is malformed", domain)
		}
		for _, r := range lb {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r > 0x7f && unicode.IsLetter(r)) {
				return "", fmt.Errorf("domain %q contains %q", domain, r)
			}
		}
	}
	tld := labels[len(labels)-1]
	if len(tld) < 2 || !strings.HasPrefix(tld, "xn--") && strings.IndexFunc(tld, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
		return "", fmt.Errorf("domain %q has no valid top-level domain", domain)
	}
	return addr, nil
}

// oneLine drops control characters (terminal escapes from scraped pages)
// and collapses whitespace.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)), " ")
}

// cleanText is oneLine for multi-line text: newlines stay.
func cleanText(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, ln := range lines {
		lines[i] = oneLine(ln)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func exportPath(list, path string) string {
	if strings.TrimSpace(path) != "" {
		return path
	}
	safe := strings.Map(func(r rune) rune {
		if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.') {
			return r
		}
		return '-'
	}, list)
	return "leads-" + strings.Trim(safe, "-.") + ".csv"
}

// WriteLeadsCSV writes leads as RFC 4180 CSV (CRLF line ends, fields with
// commas, quotes or newlines quoted) with a header row.
func WriteLeadsCSV(w io.Writer, leads []store.Lead) error {
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	if err := cw.Write(LeadsCSVHeader); err != nil {
		return err
	}
	for _, l := range leads {
		if err := cw.Write([]string{l.List, l.Company, l.Website, l.Domain, l.ContactName, l.Title, l.Email, l.Phone,
			l.SourceURL, l.Notes, l.CreatedAt.UTC().Format(time.RFC3339), l.UpdatedAt.UTC().Format(time.RFC3339)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ExportLeads writes list as CSV to path (relative to root; default
// leads-<list>.csv), creating parent directories, atomically. It returns
// the path as shown to the user, the number of leads and the file size.
func ExportLeads(ctx context.Context, st LeadStore, root, list, path string) (shown string, n int, size int64, err error) {
	if list, err = checkListName(list); err != nil {
		return "", 0, 0, err
	}
	abs := followLink(resolvePath(root, exportPath(list, path)))
	shown = displayPath(root, abs)
	if strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(filepath.Separator)) {
		return "", 0, 0, fmt.Errorf("path %q is a directory; give a file name such as %s", path, filepath.Join(path, exportPath(list, "")))
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return "", 0, 0, fmt.Errorf("%s is a directory; give a file name such as %s", shown, filepath.Join(shown, exportPath(list, "")))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", 0, 0, fmt.Errorf("stat %s: %w", shown, err)
	}
	leads, err := st.Leads(ctx, list)
	if err != nil {
		return "", 0, 0, fmt.Errorf("read lead list %q: %w", list, err)
	}
	if len(leads) == 0 {
		return "", 0, 0, fmt.Errorf("lead list %q is empty or does not exist%s", list, knownLists(ctx, st))
	}
	var buf bytes.Buffer
	if err := WriteLeadsCSV(&buf, leads); err != nil {
		return "", 0, 0, fmt.Errorf("encode CSV: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return "", 0, 0, fmt.Errorf("create parent directories of %s: %w", shown, err)
	}
	if err := atomicWrite(abs, buf.Bytes(), 0o644); err != nil {
		return "", 0, 0, err
	}
	return shown, len(leads), int64(buf.Len()), nil
}

// knownLists names the lists that exist, for an error message.
func knownLists(ctx context.Context, st LeadStore) string {
	ll, ok := st.(leadLister)
	if !ok {
		return ""
	}
	lists, err := ll.LeadLists(ctx)
	if err != nil || len(lists) == 0 {
		return "; no lead lists exist yet (save leads with leads_save first)"
	}
	names := make([]string, 0, len(lists))
	for _, l := range lists {
		names = append(names, fmt.Sprintf("%q (%d)", l.Name, l.Count))
	}
	return "; lists: " + strings.Join(names, ", ")
}
