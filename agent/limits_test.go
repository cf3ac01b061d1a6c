package agent

import "testing"

func TestParseContextLimit(t *testing.T) {
	cases := map[string]int{
		"This model's maximum context length is 8192 tokens. However, you requested 9001 tokens.":            8192,
		"This model's maximum context length is 128,000 tokens.":                                             128000,
		"prompt is too long: 210000 tokens > 200000 maximum":                                                 200000,
		"the request exceeds the available context size (4096 tokens), try increasing it":                    4096,
		"request (5000 tokens) exceeds the available context size (4096 tokens)":                             4096,
		"This model's maximum context length is 32768 tokens and your request has 40000 input tokens (vLLM)": 32768,
		"Input is too long: the context window of 16384 tokens was exceeded":                                 16384,
		"max_model_len=8192 but the prompt has 9000 tokens":                                                  8192,
		"Requested tokens (9000) exceed context window of 8192":                                              8192,
		"input exceeds the limit of 65536 tokens":                                                            65536,
	}
	for msg, want := range cases {
		if got, ok := ParseContextLimit(msg); !ok || got != want {
			t.Errorf("ParseContextLimit(%q) = %d, %v; want %d", msg, got, ok, want)
		}
	}
	for _, msg := range []string{"context_length_exceeded", "the request exceeds the available context size, try increasing it", "too many tokens"} {
		if n, ok := ParseContextLimit(msg); ok {
			t.Errorf("ParseContextLimit(%q) = %d, want none", msg, n)
		}
	}
}
