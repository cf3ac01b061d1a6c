package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Lead is one prospect of a lead list. Domain and Email are normalized (lower
// case, Domain without scheme, "www." or path) and "" when unknown, so that
// (List, Domain, Email) identifies a lead: one row per contact per company,
// plus one company-level row with Email "".
type Lead struct {
	ID          int64
	List        string
	Company     string
	Website     string
	Domain      string // derived from Website when empty
	ContactName string
	Title       string
	Email       string
	Phone       string
	SourceURL   string // required: where the lead was found
	Notes       string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// NormalizeDomain turns "https://www.Example.com/about" or "Example.com."
// into "example.com".
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
	h := strings.TrimSuffix(u.Hostname(), ".")
	return strings.TrimPrefix(h, "www.")
}

// UpsertLead inserts a lead or, when (List, Domain, Email) exists, fills in
// the fields the new one has (non-empty values win). It returns the row id.
// An empty SourceURL is ErrInvalid.
func (s *Store) UpsertLead(ctx context.Context, l Lead) (int64, error) {
	l.Email = strings.ToLower(strings.TrimSpace(l.Email))
	if l.Domain == "" {
		l.Domain = l.Website
	}
	l.Domain = NormalizeDomain(l.Domain)
	if l.Domain == "" && l.Email != "" {
		_, host, _ := strings.Cut(l.Email, "@")
		l.Domain = NormalizeDomain(host)
	}
	now := s.nowMs()
	var id int64
	err := s.w.QueryRowContext(ctx, `INSERT INTO leads
		(list, company, website, domain, contact_name, title, email, phone, source_url, notes, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (list, domain, email) DO UPDATE SET
			company      = COALESCE(NULLIF(excluded.company, ''), company),
			website      = COALESCE(NULLIF(excluded.website, ''), website),
			contact_name = COALESCE(NULLIF(excluded.contact_name, ''), contact_name),
			title        = COALESCE(NULLIF(excluded.title, ''), title),
			phone        = COALESCE(NULLIF(excluded.phone, ''), phone),
			source_url   = excluded.source_url,
			notes        = COALESCE(NULLIF(excluded.notes, ''), notes),
			updated_at   = excluded.updated_at
		RETURNING id`,
		l.List, l.Company, l.Website, l.Domain, l.ContactName, l.Title, l.Email, l.Phone, l.SourceURL, l.Notes,
		now, now).Scan(&id)
	if err != nil {
		return 0, wrap(fmt.Sprintf("upsert lead %q in list %q", l.Domain, l.List), err)
	}
	s.kickMaintain()
	return id, nil
}

// Leads returns the leads of a list, oldest first.
func (s *Store) Leads(ctx context.Context, list string) ([]Lead, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, list, company, website, domain, contact_name, title, email,
		phone, source_url, notes, created_at, updated_at FROM leads WHERE list = ? ORDER BY id`, list)
	if err != nil {
		return nil, wrap("list leads", err)
	}
	defer rows.Close()
	var out []Lead
	for rows.Next() {
		var l Lead
		var created, updated int64
		if err := rows.Scan(&l.ID, &l.List, &l.Company, &l.Website, &l.Domain, &l.ContactName, &l.Title, &l.Email,
			&l.Phone, &l.SourceURL, &l.Notes, &created, &updated); err != nil {
			return nil, wrap("list leads", err)
		}
		l.CreatedAt, l.UpdatedAt = fromMs(created), fromMs(updated)
		out = append(out, l)
	}
	return out, wrap("list leads", rows.Err())
}
