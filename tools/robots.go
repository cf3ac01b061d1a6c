package tools

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

const (
	robotsMaxBytes = 500 << 10 // RFC 9309 asks crawlers to parse at least 500 KiB
	robotsTimeout  = 5 * time.Second
	robotsTTL      = 24 * time.Hour // RFC 9309: do not use a cached copy for longer
)

// robotsRule is one Allow or Disallow line.
type robotsRule struct {
	allow   bool
	pattern string // normalized path pattern; '*' any run, trailing '$' end
	line    int
	text    string // the line as written, for messages
}

// robotsRules are the rules of one robots.txt that apply to our agent.
type robotsRules struct {
	group string // "User-agent: …" of the group(s) that applied; "" when none did
	rules []robotsRule
}

// RobotsDeniedError says robots.txt forbids a URL.
type RobotsDeniedError struct {
	URL, RobotsURL, Group string
	Rule                  robotsRule
}

func (e *RobotsDeniedError) Error() string {
	return fmt.Sprintf("robots.txt disallows %s: rule %q (line %d, group %q) in %s. Respect it: do not fetch this page another way; "+
		"look for the information on an allowed page or another source (the user can turn robots checks off with web.respect_robots=false)",
		e.URL, e.Rule.text, e.Rule.line, e.Group, e.RobotsURL)
}

// parseRobots reads a robots.txt (RFC 9309) and keeps the groups for token
// (our product token, lower case), or the "*" groups when none names it.
// Groups naming the same agent are merged, as the RFC asks.
func parseRobots(body string, token string) robotsRules {
	type group struct {
		agents []string
		rules  []robotsRule
	}
	var groups []*group
	var cur *group
	inRules := false // a rule was seen since the last user-agent line
	for i, line := range strings.Split(body, "\n") {
		text := strings.TrimSpace(line)
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		switch key {
		case "user-agent", "useragent", "user agent":
			if cur == nil || inRules {
				cur = &group{}
				groups = append(groups, cur)
				inRules = false
			}
			cur.agents = append(cur.agents, strings.ToLower(value))
		case "allow", "disallow":
			if cur == nil {
				continue // rules before any user-agent line belong to nobody
			}
			inRules = true
			if value == "" {
				continue // "Disallow:" with no path allows everything
			}
			if !strings.HasPrefix(value, "/") && !strings.HasPrefix(value, "*") {
				value = "/" + value
			}
			cur.rules = append(cur.rules, robotsRule{allow: key == "allow", pattern: normalizeRobotsPath(value), line: i + 1, text: text})
		}
	}
	pick := func(match func(agent string) bool) robotsRules {
		var out robotsRules
		for _, g := range groups {
			for _, a := range g.agents {
				if match(a) {
					out.group = "User-agent: " + a
					out.rules = append(out.rules, g.rules...)
					break
				}
			}
		}
		return out
	}
	if r := pick(func(a string) bool { return productToken(a) == token }); r.group != "" {
		return r
	}
	return pick(func(a string) bool { return a == "*" })
}

// productToken is the leading [a-z_-] run of a user-agent value, lower
// case: "Polly/1.0 (+https://…)" → "polly".
func productToken(ua string) string {
	ua = strings.ToLower(strings.TrimSpace(ua))
	end := 0
	for end < len(ua) {
		c := ua[end]
		if c >= 'a' && c <= 'z' || c == '_' || c == '-' {
			end++
			continue
		}
		break
	}
	return ua[:end]
}

// check returns the rule that decides path (escaped path plus "?query"):
// the longest matching pattern wins, Allow on a tie. A nil rule allows.
func (r robotsRules) check(path string) *robotsRule {
	if path == "/robots.txt" {
		return nil
	}
	path = normalizeRobotsPath(path)
	var best *robotsRule
	for i := range r.rules {
		rule := &r.rules[i]
		if !robotsMatch(rule.pattern, path) {
			continue
		}
		if best == nil || len(rule.pattern) > len(best.pattern) || len(rule.pattern) == len(best.pattern) && rule.allow {
			best = rule
		}
	}
	if best == nil || best.allow {
		return nil
	}
	return best
}

// robotsMatch reports whether pattern matches a prefix of path ('*' matches
// any run of characters; a final '$' anchors the pattern at the end).
func robotsMatch(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(path, parts[0]) {
		return false
	}
	pos := len(parts[0])
	if len(parts) == 1 {
		return !anchored || pos == len(path)
	}
	for i, part := range parts[1:] {
		if anchored && i == len(parts)-2 {
			return len(path)-len(part) >= pos && strings.HasSuffix(path, part)
		}
		j := strings.Index(path[pos:], part)
		if j < 0 {
			return false
		}
		pos += j + len(part)
	}
	return true
}

// normalizeRobotsPath puts a path or pattern into one percent-encoding form
// (RFC 9309 §2.2.2): unreserved characters decoded, other escapes upper
// case, non-ASCII bytes and spaces encoded.
func normalizeRobotsPath(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			v := unhex(s[i+1])<<4 | unhex(s[i+2])
			if v >= 'a' && v <= 'z' || v >= 'A' && v <= 'Z' || v >= '0' && v <= '9' || strings.IndexByte("-._~", v) >= 0 {
				b.WriteByte(v)
			} else {
				b.WriteByte('%')
				b.WriteByte(hex[v>>4])
				b.WriteByte(hex[v&15])
			}
			i += 2
		case c <= ' ' || c >= 0x7f:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// robotsCache holds the parsed robots.txt per origin for one tool set; one
// fetch per origin even when calls race.
type robotsCache struct {
	mu sync.Mutex
	m  map[string]*robotsEntry
}

type robotsEntry struct {
	ready     chan struct{} // closed once rules is set
	rules     robotsRules
	url       string
	fetched   time.Time
	cancelled bool // the fetch was cut by its caller; fetch again
}

// robotsFor returns the rules for u's origin, fetching robots.txt once.
// A missing or unreadable robots.txt allows everything.
func (w *webFetcher) robotsFor(ctx context.Context, u *url.URL) (*robotsEntry, error) {
	origin := u.Scheme + "://" + u.Host
	for {
		w.robots.mu.Lock()
		e := w.robots.m[origin]
		// Reuse an entry being fetched, or a fresh one; replace a stale or cut one.
		if e != nil && !e.cancelled && (!isClosed(e.ready) || w.now().Sub(e.fetched) < robotsTTL) {
			w.robots.mu.Unlock()
			select {
			case <-e.ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if e.cancelled {
				continue
			}
			return e, nil
		}
		e = &robotsEntry{ready: make(chan struct{}), url: origin + "/robots.txt"}
		w.robots.m[origin] = e
		w.robots.mu.Unlock()

		body, err := w.fetchRobots(ctx, e.url)
		cut := err != nil && ctx.Err() != nil
		w.robots.mu.Lock()
		e.cancelled = cut
		e.rules = parseRobots(body, w.token)
		e.fetched = w.now()
		close(e.ready)
		w.robots.mu.Unlock()
		if cut {
			return nil, ctx.Err()
		}
		return e, nil
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// fetchRobots returns the robots.txt body, or "" (allow all) when there is
// none or it cannot be read.
func (w *webFetcher) fetchRobots(ctx context.Context, robotsURL string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, min(robotsTimeout, w.opts.Timeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, robotsURL, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("User-Agent", w.opts.UserAgent)
	req.Header.Set("Accept", "text/plain,*/*;q=0.5")
	resp, err := w.robotsClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", nil // 4xx: no rules; 5xx: the brief says a broken robots.txt allows everything
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, robotsMaxBytes)) // on a read error keep what arrived
	return string(b), nil
}

// checkRobots returns a *RobotsDeniedError when robots.txt forbids u.
func (w *webFetcher) checkRobots(ctx context.Context, u *url.URL) error {
	if !w.opts.RespectRobots {
		return nil
	}
	e, err := w.robotsFor(ctx, u)
	if err != nil {
		return fmt.Errorf("read robots.txt of %s: %w", u.Host, err)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	if rule := e.rules.check(path); rule != nil {
		return &RobotsDeniedError{URL: u.String(), RobotsURL: e.url, Group: e.rules.group, Rule: *rule}
	}
	return nil
}
