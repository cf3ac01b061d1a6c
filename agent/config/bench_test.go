package config_test

import (
	"testing"

	"polly/agent/config"
)

// BenchmarkLoadProject is start-up's config cost with a project file that
// holds settings needing trust: untrusted (split, hash, trust store read)
// and trusted (the same, then everything merged).
func BenchmarkLoadProject(b *testing.B) {
	for _, trusted := range []bool{false, true} {
		name := "untrusted"
		if trusted {
			name = "trusted"
		}
		b.Run(name, func(b *testing.B) {
			f := newFixtureTB(b, "", `{"mode": "auto-edit", "providers": {"openai": {"base_url": "http://127.0.0.1:9/v1"}}, "context": {"anchor_every": 3}, "permissions": {"allow": ["run_command(make *)"], "deny": ["run_command(rm *)"]}}`)
			if trusted {
				c, err := f.load(nil, config.Flags{})
				if err != nil {
					b.Fatal(err)
				}
				if err := c.TrustProject(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.load(nil, config.Flags{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
