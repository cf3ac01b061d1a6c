package permission

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// hostOf returns the lower-case host name of a URL, without port and
// brackets, and whether it is an http(s) URL.
func hostOf(raw string) (host string, web bool, err error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", false, fmt.Errorf("parse URL %q: %w", raw, err)
	}
	host = strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return "", false, fmt.Errorf("URL %q has no host", raw)
	}
	web = u.Scheme == "http" || u.Scheme == "https"
	return host, web, nil
}

// loopback: localhost and the loopback addresses (127.0.0.0/8, ::1 and
// their IPv4-mapped forms). Names that merely resolve to loopback are not
// trusted: their DNS can change between the check and the fetch.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
