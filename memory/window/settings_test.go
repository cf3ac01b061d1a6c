package window

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Every default, pinned: the config, `polly config`, the status bar and
// the agent all read them from Defaults, so a changed number must be a
// deliberate change of this table (and of the README).
func TestDefaultsArePinned(t *testing.T) {
	want := map[string]any{
		"anchor_every": 5, "checkpoint_every": 30, "offload_chars": 2000, "offload_chars_read": 8000,
		"preview_head_chars": 400, "preview_tail_chars": 1200, "stale_after_messages": 15,
		"summarize_at_tokens": 40000, "summarize_window_ratio": 0.75, "keep_recent_messages": 15,
		"hard_limit_tokens": 120000, "hard_keep_messages": 20, "recent_actions": 20,
		"context_error_keep_outputs": 3, "context_error_cut_chars": 1000,
		"request_chars": 8000, "request_head_chars": 3000, "request_tail_chars": 3000,
		"understanding_chars": 4000, "block_files": 40,
		"summary_max_tokens": 8000, "summary_share": 0.125, "summary_min_gain": 0.3, "summary_backoff": 0.25,
		"recent_outputs_share": 0.5, "fixed_warn_share": 0.5, "huge_args_chars": 50000,
		"loop_note": 3, "loop_stop": 8, "loop_window": 24,
	}
	b, err := json.Marshal(Defaults())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: no such setting", k)
			continue
		}
		if g != reflect.ValueOf(v).Convert(reflect.TypeOf(float64(0))).Interface() {
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d settings, %d pinned: pin the new one here", len(got), len(want))
	}
	// Zero is "not set": every field comes back as its default.
	if (Settings{}).WithDefaults() != Defaults() {
		t.Errorf("WithDefaults of the zero value = %+v", (Settings{}).WithDefaults())
	}
	// A set field is kept.
	if s := (Settings{AnchorEvery: 7, SummaryGain: 0.5}).WithDefaults(); s.AnchorEvery != 7 || s.SummaryGain != 0.5 || s.KeepRecent != 15 {
		t.Errorf("overrides lost: %+v", s)
	}
}

// The budget and the threshold, for the windows local models have and for
// a big one: the fixed cost (system prompt, tools, task block) counts, so
// a 16k window with a 6.5k fixed cost summarizes at ~11.9k, not at 75% of
// the budget (10.3k) where a summary had ~3.8k tokens to work in.
func TestBudgetAndThreshold(t *testing.T) {
	s := Defaults()
	for _, c := range []struct {
		window, maxOut, margin, fixed int
		budget, threshold, hard       int
	}{
		{16000, 0, 0, 6500, 13680, 6500 + 5385, 12996},
		{20000, 0, 0, 6500, 17100, 6500 + 7950, 16245},
		{32000, 0, 0, 6500, 27360, 6500 + 15645, 25992},
		{32000, 0, 0, 0, 27360, 20520, 25992},
		{128000, 0, 0, 6500, 121344, 40000, 115276},
		{1047576, 0, 0, 6500, 1022529, 40000, 120000},
		{0, 0, 0, 0, 121344, 40000, 115276}, // unknown window: 128k
		{16000, 2000, 500, 6500, 13500, 6500 + 5250, 12825},
		{8000, 0, 0, 9000, 6744, 9000, 6406}, // a fixed cost over the budget: the agent refuses it first (fitSystem)
	} {
		b := Budget(c.window, c.maxOut, c.margin)
		if b != c.budget {
			t.Errorf("Budget(%d, %d, %d) = %d, want %d", c.window, c.maxOut, c.margin, b, c.budget)
			continue
		}
		if got := s.Threshold(b, c.fixed); got != min(c.threshold, 40000) {
			t.Errorf("window %d, fixed %d: threshold %d, want %d", c.window, c.fixed, got, c.threshold)
		}
		if got := s.Hard(b); got != c.hard {
			t.Errorf("window %d: hard %d, want %d", c.window, got, c.hard)
		}
	}
}

// The offload limit means what it says: every output over it is
// offloaded; one just above it gets a shorter preview, never over 60% of
// the output; one at the limit stays whole.
func TestOffloadLimitMeansWhatItSays(t *testing.T) {
	s := Defaults()
	line := "a line of command output that goes on for a while, number "
	for _, n := range []int{2000, 2001, 2100, 2880, 3000, 10000, 100000} {
		var b []byte
		for i := 0; len(b) < n; i++ {
			b = append(b, line...)
			b = append(b, byte('0'+i%10), '\n')
		}
		out := string(b[:n])
		got, off := OutputContent(out, n, 42, "run_command", s)
		if n <= s.OffloadChars {
			if off || got != out {
				t.Errorf("%d chars: changed (offloaded %v)", n, off)
			}
			continue
		}
		if !off || len([]rune(got)) > int(MaxPreviewShare*float64(n)) {
			t.Errorf("%d chars: offloaded %v, preview %d chars", n, off, len([]rune(got)))
		}
		if !strings.HasPrefix(got, "[output #42: ") || !strings.Contains(got, "omitted …]") {
			t.Errorf("%d chars: preview without its note: %.120q", n, got)
		}
	}
	// read_file and grep have their own, higher limit.
	big := strings.Repeat("x\n", 3000)
	if _, off := OutputContent(big, len(big), 1, "read_file", s); off {
		t.Error("a 6,000-character read_file output was offloaded")
	}
}
