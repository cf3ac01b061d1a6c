package store

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestNormalizeDomain(t *testing.T) {
	for in, want := range map[string]string{
		"https://www.Acme.com/about": "acme.com",
		"Acme.com.":                  "acme.com",
		"shop.acme.co.uk":            "acme.co.uk",
		"http://blog.acme.io:8080/x": "acme.io",
		"http://127.0.0.1:8080/a":    "127.0.0.1",
		"localhost":                  "localhost",
		"github.io":                  "github.io",
		"acme.github.io":             "acme.github.io", // a private public suffix: one company per sub-domain
		"":                           "",
		"http://[::1]:80/":           "::1",
	} {
		if got := NormalizeDomain(in); got != want {
			t.Errorf("NormalizeDomain(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNormalizeLeadDomainFromEmail(t *testing.T) {
	if l := NormalizeLead(Lead{Email: " Jane@Sub.Acme.com "}); l.Domain != "acme.com" || l.Email != "jane@sub.acme.com" {
		t.Errorf("company email: %+v", l)
	}
	// A mailbox provider says nothing about the company.
	if l := NormalizeLead(Lead{Email: "jane@gmail.com"}); l.Domain != "" {
		t.Errorf("free mail: domain %q, want empty", l.Domain)
	}
	if l := NormalizeLead(Lead{Email: "jane@gmail.com", Website: "acme.com"}); l.Domain != "acme.com" {
		t.Errorf("website wins: domain %q", l.Domain)
	}
}

func TestSaveLeadsBatchDedupe(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	src := "https://dir.test/list"
	out, err := s.SaveLeads(ctx, []Lead{
		{List: "l", Company: "Acme", Website: "https://acme.com", SourceURL: src},
		{List: "l", Company: "Beta", Website: "beta.io", SourceURL: src},
		{List: "l", Company: "Acme Inc", Website: "http://www.acme.com/contact", Phone: "+1 555", SourceURL: "https://acme.com/contact", Notes: "HQ in Berlin"},
		{List: "l", ContactName: "Jane", Email: "jane@acme.com", SourceURL: "https://acme.com/team"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Merged || out[1].Merged || !out[2].Merged || out[3].Merged {
		t.Fatalf("merged flags %+v", out)
	}
	if out[2].ID != out[0].ID {
		t.Errorf("duplicate went to row %d, want %d", out[2].ID, out[0].ID)
	}
	if want := []string{"company", "phone", "notes"}; !slices.Equal(out[2].Changed, want) {
		t.Errorf("changed %v, want %v", out[2].Changed, want)
	}
	leads, err := s.Leads(ctx, "l")
	if err != nil || len(leads) != 3 {
		t.Fatalf("leads %+v (%v)", leads, err)
	}
	a := leads[0]
	if a.Company != "Acme Inc" || a.Website != "https://acme.com" || a.Phone != "+1 555" || a.SourceURL != src ||
		a.Notes != "HQ in Berlin\nalso found at https://acme.com/contact" {
		t.Errorf("merged lead %+v", a)
	}
	// Saving the same data again changes nothing.
	again, err := s.SaveLeads(ctx, []Lead{{List: "l", Company: "Beta", Website: "beta.io", SourceURL: src}})
	if err != nil || !again[0].Merged || len(again[0].Changed) != 0 {
		t.Errorf("resave: %+v (%v)", again, err)
	}
	lists, err := s.LeadLists(ctx)
	if err != nil || len(lists) != 1 || lists[0].Name != "l" || lists[0].Count != 3 {
		t.Errorf("lists %+v (%v)", lists, err)
	}
}

func TestSaveLeadsAllOrNothing(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for _, bad := range []Lead{
		{List: "l", Company: "No key", SourceURL: "https://x.test"},
		{List: "l", Website: "x.test"},
		{Website: "x.test", SourceURL: "https://x.test"},
	} {
		_, err := s.SaveLeads(ctx, []Lead{{List: "l", Website: "ok.test", SourceURL: "https://ok.test"}, bad})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err %v, want ErrInvalid", bad, err)
		}
	}
	if leads, _ := s.Leads(ctx, "l"); len(leads) != 0 {
		t.Errorf("a rejected batch stored %d leads", len(leads))
	}
}
