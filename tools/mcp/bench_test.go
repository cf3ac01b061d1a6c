package mcp

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// One tools/call round trip to a stdio server (the test server's echo).
func BenchmarkStdioCall(b *testing.B) {
	m := New([]Config{stdio("demo", "ok", 20*time.Second)}, "bench")
	defer m.Close()
	m.Wait(context.Background())
	var run func() error
	for _, x := range m.Tools() {
		if x.Name() == "mcp__demo__echo" {
			run = func() error {
				_, err := x.Run(context.Background(), json.RawMessage(`{"text":"hi"}`))
				return err
			}
		}
	}
	if run == nil {
		b.Fatal("no echo tool")
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
}

// Sanitising a typical tool schema when a server's tools are listed.
func BenchmarkSanitize(b *testing.B) {
	var schema any
	_ = json.Unmarshal([]byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"q":{"type":"string","description":"query"},"limit":{"type":"integer","minimum":1},"tags":{"type":"array","items":{"type":"string"}}},"required":["q"]}`), &schema)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sanitize(schema); err != nil {
			b.Fatal(err)
		}
	}
}
