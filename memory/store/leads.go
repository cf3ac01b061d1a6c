package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/publicsuffix"
)

// Lead is one prospect of a lead list.
//
// Identity: (List, Domain, Email) names a lead, so a list holds one row per
// contact (Email set) per company plus at most one company-level row (Email
// ""). Domain and Email are normalized (see NormalizeLead) and "" when
// unknown; a lead needs at least one of them, or it could not be told apart
// from other companies.
type Lead struct {
	ID          int64
	List        string
	Company     string
	Website     string
	Domain      string // derived from Website, else from Email, when empty
	ContactName string
	Title       string
	Email       string
	Phone       string
	SourceURL   string // required: where the lead was found
	Notes       string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// LeadOutcome is what SaveLeads did with one lead.
type LeadOutcome struct {
	ID      int64
	Merged  bool     // an existing lead with the same key was updated instead of inserting
	Changed []string // when merged: the columns the new lead filled in or changed
}

// LeadList is one list name with its size.
type LeadList struct {
	Name      string
	Count     int
	UpdatedAt time.Time // newest change to any of its leads
}

// NormalizeDomain turns "https://www.Example.com/about", "Example.com." or
// "shop.example.co.uk" into the registrable domain ("example.com",
// "example.co.uk"), so the sub-domains of one company count as one. IP
// addresses and single-label hosts are kept as they are.
func NormalizeDomain(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return ""
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	h := strings.TrimPrefix(strings.TrimSuffix(u.Hostname(), "."), "www.")
	if h == "" || net.ParseIP(h) != nil || !strings.Contains(h, ".") {
		return h
	}
	if d, err := publicsuffix.EffectiveTLDPlusOne(h); err == nil {
		return d
	}
	return h // the host is itself a public suffix ("github.io"): keep it
}

// freeMail are mailbox providers: an address there says nothing about the
// company, so no domain is derived from it.
var freeMail = map[string]bool{
	"gmail.com": true, "googlemail.com": true, "yahoo.com": true, "ymail.com": true, "hotmail.com": true,
	"outlook.com": true, "live.com": true, "msn.com": true, "icloud.com": true, "me.com": true, "mac.com": true,
	"aol.com": true, "proton.me": true, "protonmail.com": true, "gmx.com": true, "gmx.de": true, "gmx.net": true,
	"web.de": true, "mail.com": true, "yandex.ru": true, "mail.ru": true, "qq.com": true, "163.com": true,
	"zoho.com": true, "fastmail.com": true, "t-online.de": true, "orange.fr": true, "free.fr": true,
}

// IsFreeMailDomain reports whether d (normalized) is a public mailbox provider.
func IsFreeMailDomain(d string) bool { return freeMail[d] }

// NormalizeLead trims every field, lower-cases Email and fills Domain: from
// Domain or Website when given, else from the email's domain unless that is
// a public mailbox provider.
func NormalizeLead(l Lead) Lead {
	for _, f := range []*string{&l.List, &l.Company, &l.Website, &l.Domain, &l.ContactName, &l.Title, &l.Phone, &l.SourceURL, &l.Notes} {
		*f = strings.TrimSpace(*f)
	}
	l.Email = strings.ToLower(strings.TrimSpace(l.Email))
	if l.Domain == "" {
		l.Domain = l.Website
	}
	l.Domain = NormalizeDomain(l.Domain)
	if l.Domain == "" && l.Email != "" {
		_, host, _ := strings.Cut(l.Email, "@")
		if d := NormalizeDomain(host); !IsFreeMailDomain(d) {
			l.Domain = d
		}
	}
	return l
}

// UpsertLead saves one lead; see SaveLeads. It returns the row id.
func (s *Store) UpsertLead(ctx context.Context, l Lead) (int64, error) {
	out, err := s.SaveLeads(ctx, []Lead{l})
	if err != nil {
		return 0, err
	}
	return out[0].ID, nil
}

// SaveLeads normalizes and stores leads in one transaction: all or none.
// A lead whose (List, Domain, Email) already exists, in the store or earlier
// in the same batch, is merged into that row: non-empty new values replace
// old ones (Website only fills an empty one), Notes are appended, and the first SourceURL is kept while a
// different later one is recorded in Notes, so no source is lost. A lead
// without List or SourceURL, or without both Domain and Email, is ErrInvalid.
func (s *Store) SaveLeads(ctx context.Context, leads []Lead) ([]LeadOutcome, error) {
	norm := make([]Lead, len(leads))
	for i, l := range leads {
		l = NormalizeLead(l)
		switch {
		case l.List == "":
			return nil, fmt.Errorf("save lead %d: %w: no list name", i, ErrInvalid)
		case l.SourceURL == "":
			return nil, fmt.Errorf("save lead %d (%s): %w: no source URL", i, l.Domain, ErrInvalid)
		case l.Domain == "" && l.Email == "":
			return nil, fmt.Errorf("save lead %d (%s): %w: needs a website, domain or email", i, l.Company, ErrInvalid)
		}
		norm[i] = l
	}
	out := make([]LeadOutcome, len(norm))
	now := s.nowMs()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for i, l := range norm {
			o, err := saveLead(ctx, tx, l, now)
			if err != nil {
				return wrap(fmt.Sprintf("save lead %q %q in list %q", l.Domain, l.Email, l.List), err)
			}
			out[i] = o
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func saveLead(ctx context.Context, tx *sql.Tx, l Lead, now int64) (LeadOutcome, error) {
	var old Lead
	err := tx.QueryRowContext(ctx, `SELECT id, company, website, contact_name, title, phone, source_url, notes
		FROM leads WHERE list = ? AND domain = ? AND email = ?`, l.List, l.Domain, l.Email).
		Scan(&old.ID, &old.Company, &old.Website, &old.ContactName, &old.Title, &old.Phone, &old.SourceURL, &old.Notes)
	if errors.Is(err, sql.ErrNoRows) {
		var id int64
		err := tx.QueryRowContext(ctx, `INSERT INTO leads
			(list, company, website, domain, contact_name, title, email, phone, source_url, notes, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			l.List, l.Company, l.Website, l.Domain, l.ContactName, l.Title, l.Email, l.Phone, l.SourceURL, l.Notes,
			now, now).Scan(&id)
		return LeadOutcome{ID: id}, err
	}
	if err != nil {
		return LeadOutcome{}, err
	}
	m := merge(old, l)
	if len(m.Changed) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE leads SET company = ?, website = ?, contact_name = ?, title = ?,
			phone = ?, notes = ?, updated_at = ? WHERE id = ?`,
			m.lead.Company, m.lead.Website, m.lead.ContactName, m.lead.Title, m.lead.Phone, m.lead.Notes, now, old.ID); err != nil {
			return LeadOutcome{}, err
		}
	}
	return LeadOutcome{ID: old.ID, Merged: true, Changed: m.Changed}, nil
}

type merged struct {
	lead    Lead
	Changed []string
}

// merge applies the non-empty fields of l over old.
func merge(old, l Lead) merged {
	m := merged{lead: old}
	for _, f := range []struct {
		name      string
		dst       *string
		newValue  string
		onlyEmpty bool
	}{
		{"company", &m.lead.Company, l.Company, false},
		// Same domain by construction; the first URL is usually the home page,
		// a later one some deeper page, so keep it.
		{"website", &m.lead.Website, l.Website, true},
		{"contact_name", &m.lead.ContactName, l.ContactName, false},
		{"title", &m.lead.Title, l.Title, false},
		{"phone", &m.lead.Phone, l.Phone, false},
	} {
		if f.newValue != "" && f.newValue != *f.dst && (!f.onlyEmpty || *f.dst == "") {
			*f.dst = f.newValue
			m.Changed = append(m.Changed, f.name)
		}
	}
	notes := m.lead.Notes
	add := func(s string) {
		if s == "" || strings.Contains(notes, s) {
			return
		}
		if notes != "" {
			notes += "\n"
		}
		notes += s
	}
	add(l.Notes)
	if l.SourceURL != old.SourceURL {
		add("also found at " + l.SourceURL)
	}
	if notes != m.lead.Notes {
		m.lead.Notes = notes
		m.Changed = append(m.Changed, "notes")
	}
	return m
}

// Leads returns the leads of a list, oldest first.
func (s *Store) Leads(ctx context.Context, list string) ([]Lead, error) {
	return readAll(ctx, s.r, "list leads", func(rows *sql.Rows) (Lead, error) {
		var l Lead
		var created, updated int64
		if err := rows.Scan(&l.ID, &l.List, &l.Company, &l.Website, &l.Domain, &l.ContactName, &l.Title, &l.Email,
			&l.Phone, &l.SourceURL, &l.Notes, &created, &updated); err != nil {
			return l, err
		}
		l.CreatedAt, l.UpdatedAt = fromMs(created), fromMs(updated)
		return l, nil
	}, `SELECT id, list, company, website, domain, contact_name, title, email,
		phone, source_url, notes, created_at, updated_at FROM leads WHERE list = ? ORDER BY id`, list)
}

// LeadLists returns every list name with its number of leads, by name.
func (s *Store) LeadLists(ctx context.Context) ([]LeadList, error) {
	return readAll(ctx, s.r, "list lead lists", func(rows *sql.Rows) (LeadList, error) {
		var l LeadList
		var updated int64
		if err := rows.Scan(&l.Name, &l.Count, &updated); err != nil {
			return l, err
		}
		l.UpdatedAt = fromMs(updated)
		return l, nil
	}, `SELECT list, COUNT(*), MAX(updated_at) FROM leads GROUP BY list ORDER BY list`)
}
