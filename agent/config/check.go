package config

import (
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"polly/workspace/jsonfile"
)

// Value rules live in `check` struct tags, next to the fields they guard,
// and apply to every layer alike:
//
//	min=N max=N gt=N   numeric bounds
//	oneof=a|b|c        enumerations
//	nonempty           strings that must not be ""
//	name               an identifier: letters, digits, '.', '_', '-'
//	url                an http or https URL with a host
//	envname            the name of an environment variable ("" allowed)
//	path               an absolute path, or one starting with ~/
//	secret             never echo the value in messages
//	keys=name|nonempty|header   rules for map keys

// checkValue returns what is wrong with a leaf value, or "".
func checkValue(tag string, v reflect.Value) string {
	for _, rule := range strings.Fields(tag) {
		op, arg, _ := strings.Cut(rule, "=")
		switch op {
		case "min", "max", "gt":
			limit, _ := strconv.ParseFloat(arg, 64)
			x, text := number(v)
			switch {
			case op == "min" && x < limit:
				return fmt.Sprintf("must be at least %s, got %s", arg, text)
			case op == "max" && x > limit:
				return fmt.Sprintf("must be at most %s, got %s", arg, text)
			case op == "gt" && x <= limit:
				return fmt.Sprintf("must be greater than %s, got %s", arg, text)
			}
		case "oneof":
			opts := strings.Split(arg, "|")
			if s := v.String(); !slices.Contains(opts, s) {
				msg := fmt.Sprintf("expected one of %s, got %q", strings.Join(opts, ", "), s)
				if c := jsonfile.Closest(s, opts); c != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", c)
				}
				return msg
			}
		case "nonempty":
			if v.String() == "" {
				return "must not be empty"
			}
		case "name":
			if msg := checkName(v.String()); msg != "" {
				return msg
			}
		case "url":
			if msg := checkURL(v.String()); msg != "" {
				return msg
			}
		case "envname":
			if msg := checkEnvName(v.String()); msg != "" {
				return msg
			}
		case "path":
			if s := v.String(); !strings.HasPrefix(s, "/") && s != "~" && !strings.HasPrefix(s, "~/") {
				return fmt.Sprintf("expected an absolute path (or one starting with ~/), got %q", s)
			}
		case "regex":
			if s := v.String(); s != "" && s != "*" {
				if _, err := regexp.Compile(s); err != nil {
					return fmt.Sprintf("%q is not a valid regular expression: %v", s, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
				}
			}
		}
	}
	return ""
}

// checkKey returns what is wrong with a map key, or "".
func checkKey(tag, key string) string {
	for _, rule := range strings.Fields(tag) {
		switch rule {
		case "keys=name":
			if msg := checkName(key); msg != "" {
				return "key " + msg
			}
		case "keys=nonempty":
			if key == "" {
				return "key must not be empty"
			}
		case "keys=oneof=" + strings.TrimPrefix(rule, "keys=oneof="):
			opts := strings.Split(strings.TrimPrefix(rule, "keys=oneof="), "|")
			if !slices.Contains(opts, key) {
				msg := fmt.Sprintf("unknown key %q (expected one of %s)", key, strings.Join(opts, ", "))
				if c := jsonfile.Closest(key, opts); c != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", c)
				}
				return msg
			}
		case "keys=header":
			if key == "" || strings.ContainsFunc(key, func(r rune) bool {
				return r <= ' ' || r >= 0x7f || strings.ContainsRune(`:()<>@,;\"/[]?={}`, r)
			}) {
				return fmt.Sprintf("%q is not a valid HTTP header name", key)
			}
		}
	}
	return ""
}

func number(v reflect.Value) (float64, string) {
	if v.Kind() == reflect.Float64 {
		return v.Float(), strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return float64(v.Int()), strconv.FormatInt(v.Int(), 10)
}

// checkName guards names that appear in paths and in "provider/model":
// no slashes, no spaces.
func checkName(s string) string {
	if s == "" {
		return "must not be empty"
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || i > 0 && (r == '.' || r == '_' || r == '-')
		if !ok {
			return fmt.Sprintf("%q is not a valid name (letters, digits, '.', '_', '-')", s)
		}
	}
	return ""
}

func checkURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("expected an http or https URL, got %q", s)
	}
	return ""
}

func checkEnvName(s string) string {
	// A common slip is pasting the key itself here; never echo it.
	const keyLike = "expected the name of an environment variable (e.g. \"OPENAI_API_KEY\"), got what looks like an API key; put the key in that variable instead"
	lower, digit := false, false
	for i, r := range s {
		lower = lower || r >= 'a' && r <= 'z'
		digit = digit || r >= '0' && r <= '9'
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			if strings.HasPrefix(s, "sk-") || len(s) >= 20 {
				return keyLike
			}
			return fmt.Sprintf("%q is not an environment variable name", s)
		}
	}
	if len(s) >= 32 && lower && digit {
		return keyLike
	}
	return ""
}
