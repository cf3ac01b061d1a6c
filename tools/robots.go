package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/temoto/robotstxt"
	"golang.org/x/sync/singleflight"
)

const (
	robotsMaxBytes = 500 << 10 // RFC 9309 asks crawlers to parse at least 500 KiB
	robotsTimeout  = 5 * time.Second
	robotsTTL      = 24 * time.Hour // RFC 9309: do not use a cached copy for longer
)

// RobotsDeniedError says robots.txt forbids a URL. The parser does not say
// which line decided, so the message names the path and the group.
type RobotsDeniedError struct {
	URL, Path, RobotsURL string
	Group                string // "User-agent: …" of the group that applied; "" when the whole site is closed
	Why                  string // set when the whole site is closed: a server error, unreachable, unparsable
}

func (e *RobotsDeniedError) Error() string {
	const respect = "Respect it: do not fetch this page another way; look for the information on an allowed page or another source " +
		"(the user can turn robots checks off with web.respect_robots=false)"
	if e.Why != "" {
		return fmt.Sprintf("robots.txt disallows %s: %s %s, so RFC 9309 treats the whole site as disallowed. %s", e.URL, e.RobotsURL, e.Why, respect)
	}
	return fmt.Sprintf("robots.txt disallows %s: the path %q falls under a Disallow rule of group %q in %s. %s",
		e.URL, e.Path, e.Group, e.RobotsURL, respect)
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

// robotsPolicy is what one robots.txt says for our agent.
type robotsPolicy struct {
	group     *robotstxt.Group // the group that applies; nil when closedWhy is set
	agent     string           // its user-agent value ("*", "polly"), for messages
	closedWhy string           // why the whole site is disallowed (RFC 9309 §2.3.1.4), "" otherwise
}

// robotsPolicyFrom reads a fetch outcome with RFC 9309 semantics: 2xx is
// parsed; 4xx (404 included) allows everything; 5xx, an unreachable host or
// a file the parser rejects disallows everything.
func robotsPolicyFrom(status int, body []byte, fetchErr error, token string) robotsPolicy {
	if fetchErr != nil {
		return robotsPolicy{closedWhy: "could not be read (" + fetchErr.Error() + ")"}
	}
	data, err := robotstxt.FromStatusAndBytes(status, body)
	if err != nil {
		why := fmt.Sprintf("could not be parsed (%s)", strings.TrimSpace(strings.ReplaceAll(err.Error(), "\n", "; ")))
		if status < 200 || status > 599 {
			why = fmt.Sprintf("answered HTTP %d", status)
		}
		return robotsPolicy{closedWhy: why}
	}
	if status >= 500 {
		return robotsPolicy{closedWhy: fmt.Sprintf("answered HTTP %d (a server error)", status)}
	}
	g := data.FindGroup(token)
	return robotsPolicy{group: g, agent: groupAgent(data, token, g)}
}

// groupAgent names the user-agent of g, the group data.FindGroup(token)
// chose; v1.1.2 does not record it. FindGroup picks the longest agent
// that prefixes token, so that agent is the shortest prefix of token that
// FindGroup maps to g.
func groupAgent(data *robotstxt.RobotsData, token string, g *robotstxt.Group) string {
	if g == data.FindGroup("*") {
		return "*"
	}
	for k := 1; k <= len(token); k++ {
		if data.FindGroup(token[:k]) == g {
			return token[:k]
		}
	}
	return ""
}

// allows reports whether path (escaped path plus "?query") may be fetched.
func (p robotsPolicy) allows(path string) bool {
	if path == "/robots.txt" {
		return true // RFC 9309 §2.2.2: always allowed
	}
	return p.closedWhy == "" && p.group.Test(path)
}

func (p robotsPolicy) groupName() string {
	if p.agent == "" {
		return ""
	}
	return "User-agent: " + p.agent
}

// robotsCache holds the robots.txt policy per origin for one tool set;
// racing calls for one origin share one fetch.
type robotsCache struct {
	mu    sync.Mutex
	m     map[string]*robotsEntry
	group singleflight.Group // keyed by origin
}

type robotsEntry struct {
	policy  robotsPolicy
	url     string
	fetched time.Time
}

// robotsFor returns the policy for u's origin, fetching robots.txt once a
// TTL. The fetch runs in the first caller's context (its permission gate
// answers a redirect); a caller whose own context is fine retries when
// another's cancellation cut the shared fetch.
func (w *webFetcher) robotsFor(ctx context.Context, u *url.URL) (*robotsEntry, error) {
	origin := u.Scheme + "://" + u.Host
	for {
		if e := w.cachedRobots(origin); e != nil {
			return e, nil
		}
		ch := w.robots.group.DoChan(origin, func() (any, error) {
			if e := w.cachedRobots(origin); e != nil {
				return e, nil // stored while this caller waited for the group
			}
			e := &robotsEntry{url: origin + "/robots.txt"}
			status, body, err := w.fetchRobots(ctx, e.url)
			if err != nil && ctx.Err() != nil {
				return nil, ctx.Err() // cut, not learned: nothing is cached
			}
			e.policy, e.fetched = robotsPolicyFrom(status, body, err, w.token), w.now()
			w.robots.mu.Lock()
			w.robots.m[origin] = e
			w.robots.mu.Unlock()
			return e, nil
		})
		select {
		case r := <-ch:
			if r.Err == nil {
				return r.Val.(*robotsEntry), nil
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// Another caller's cancellation cut the fetch; fetch again.
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// cachedRobots returns origin's policy while it is fresh, else nil.
func (w *webFetcher) cachedRobots(origin string) *robotsEntry {
	w.robots.mu.Lock()
	defer w.robots.mu.Unlock()
	if e := w.robots.m[origin]; e != nil && w.now().Sub(e.fetched) < robotsTTL {
		return e
	}
	return nil
}

// fetchRobots GETs robots.txt and returns its status and at most
// robotsMaxBytes of its body. Redirects go through robotsClient, whose
// CheckRedirect asks the permission gate about a new host.
func (w *webFetcher) fetchRobots(ctx context.Context, robotsURL string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, min(robotsTimeout, w.opts.Timeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, robotsURL, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("User-Agent", w.opts.UserAgent)
	req.Header.Set("Accept", "text/plain,*/*;q=0.5")
	resp, err := w.robotsClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the message already
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, nil, nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, robotsMaxBytes)) // on a read error keep what arrived
	return resp.StatusCode, b, nil
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
	if e.policy.allows(path) {
		return nil
	}
	return &RobotsDeniedError{URL: u.String(), Path: path, RobotsURL: e.url, Group: e.policy.groupName(), Why: e.policy.closedWhy}
}
