// Package window decides what of a conversation goes into the model's
// context window. Build is a pure function of (history, task state,
// settings, budget): no I/O, no clock, no randomness, so every rule — task
// anchors, stale-output shrinking, failed-attempt fading, hard fallback,
// context-length recovery — is tested without a model. The agent loop does
// the I/O around it (storing anchors, writing checkpoints, summarizing).
package window

// Settings are the numbers of PRODUCT §3. Zero values mean the defaults.
// This is the one place the context numbers and their defaults live: the
// config (agent/config, key "context" and per model) holds overrides in
// this struct, under these JSON names, and `polly config` prints it with
// Defaults filled in.
type Settings struct {
	AnchorEvery      int     `json:"anchor_every"`               // the task block's anchor number advances every N tool calls (5)
	CheckpointEvery  int     `json:"checkpoint_every"`           // active_task.md every N tool calls (30)
	OffloadChars     int     `json:"offload_chars"`              // tool outputs longer than this are offloaded (2,000)
	OffloadCharsRead int     `json:"offload_chars_read"`         // … for read_file and grep (8,000)
	PreviewHead      int     `json:"preview_head_chars"`         // characters of an offloaded output kept from its start (400)
	PreviewTail      int     `json:"preview_tail_chars"`         // … and from its end, where errors land (1,200)
	StaleAfter       int     `json:"stale_after_messages"`       // tool outputs more than N messages from the end shrink (15)
	SummarizeAt      int     `json:"summarize_at_tokens"`        // summarize past this many tokens (40,000)
	SummarizeRatio   float64 `json:"summarize_window_ratio"`     // … or the fixed cost plus this share of the rest of a smaller budget (0.75)
	KeepRecent       int     `json:"keep_recent_messages"`       // messages kept raw after a summary, at most (15)
	HardLimit        int     `json:"hard_limit_tokens"`          // hard fallback past this many tokens (120,000)
	HardKeep         int     `json:"hard_keep_messages"`         // messages the hard fallback keeps (20)
	RecentActions    int     `json:"recent_actions"`             // tool actions in a checkpoint (20)
	RecoveryKeep     int     `json:"context_error_keep_outputs"` // tool outputs kept whole after a context-length error (3)
	RecoveryCut      int     `json:"context_error_cut_chars"`    // … the others cut to this many characters (1,000)
	// The task block.
	RequestChars       int `json:"request_chars"`       // a request or follow-up longer than this is shown as head + tail + id (8,000)
	RequestHead        int `json:"request_head_chars"`  // … characters of its start (3,000)
	RequestTail        int `json:"request_tail_chars"`  // … and of its end (3,000)
	UnderstandingChars int `json:"understanding_chars"` // the expanded understanding is clipped here (4,000)
	BlockFiles         int `json:"block_files"`         // files read / written listed in the block (40)
	// Summaries.
	SummaryMaxTokens int     `json:"summary_max_tokens"` // a summary's cap in tokens, also the summarizer's max output (8,000)
	SummaryShare     float64 `json:"summary_share"`      // … and at most this share of the budget (1/8)
	// SummaryGain: a summary must free at least this share of the room the
	// history has (the threshold less the fixed cost); when it cannot, kept
	// outputs shrink and fewer messages are kept first (0.3).
	SummaryGain float64 `json:"summary_min_gain"`
	// SummaryBackoff: after a summary (or one that could not help), the next
	// waits until the context has grown by this share of the room (0.25).
	SummaryBackoff float64 `json:"summary_backoff"`
	// OutputShare: recent tool outputs (and long call arguments) are kept
	// whole, newest first, while they hold at most this share of the budget
	// left beside the fixed cost;
	// older ones shrink to their one-line stub (0.5).
	OutputShare float64 `json:"recent_outputs_share"`
	// FixedWarnShare: past this share of the budget taken by the fixed cost
	// (system prompt, tool schemas, task block) the user is told once how
	// to lighten it (0.5).
	FixedWarnShare float64 `json:"fixed_warn_share"`
	HugeArgs       int     `json:"huge_args_chars"` // tool-call arguments longer than this shrink even when recent (50,000)
	// The loop detector: a call with the same arguments and result this many
	// times within the last LoopWindow calls gets a harness note; LoopStop
	// times stops the run.
	LoopNote   int `json:"loop_note"`   // (3)
	LoopStop   int `json:"loop_stop"`   // (8)
	LoopWindow int `json:"loop_window"` // (24)
}

// Defaults returns PRODUCT §3's numbers.
func Defaults() Settings {
	return Settings{
		AnchorEvery:      5,
		CheckpointEvery:  30,
		OffloadChars:     2000,
		OffloadCharsRead: 8000,
		PreviewHead:      400,
		PreviewTail:      1200,
		StaleAfter:       15,
		SummarizeAt:      40000,
		SummarizeRatio:   0.75,
		KeepRecent:       15,
		HardLimit:        120000,
		HardKeep:         20,
		RecentActions:    20,
		RecoveryKeep:     3,
		RecoveryCut:      1000,

		RequestChars:       8000,
		RequestHead:        3000,
		RequestTail:        3000,
		UnderstandingChars: 4000,
		BlockFiles:         40,
		SummaryMaxTokens:   8000,
		SummaryShare:       0.125,
		SummaryGain:        0.3,
		SummaryBackoff:     0.25,
		OutputShare:        0.5,
		FixedWarnShare:     0.5,
		HugeArgs:           50000,
		LoopNote:           3,
		LoopStop:           8,
		LoopWindow:         24,
	}
}

// WithDefaults fills zero fields from Defaults (a share outside (0, 1]
// too).
func (s Settings) WithDefaults() Settings {
	d := Defaults()
	fill := func(v *int, dv int) {
		if *v <= 0 {
			*v = dv
		}
	}
	share := func(v *float64, dv float64) {
		if *v <= 0 || *v > 1 {
			*v = dv
		}
	}
	fill(&s.AnchorEvery, d.AnchorEvery)
	fill(&s.CheckpointEvery, d.CheckpointEvery)
	fill(&s.OffloadChars, d.OffloadChars)
	fill(&s.OffloadCharsRead, d.OffloadCharsRead)
	fill(&s.PreviewHead, d.PreviewHead)
	fill(&s.PreviewTail, d.PreviewTail)
	fill(&s.StaleAfter, d.StaleAfter)
	fill(&s.SummarizeAt, d.SummarizeAt)
	fill(&s.KeepRecent, d.KeepRecent)
	fill(&s.HardLimit, d.HardLimit)
	fill(&s.HardKeep, d.HardKeep)
	fill(&s.RecentActions, d.RecentActions)
	fill(&s.RecoveryKeep, d.RecoveryKeep)
	fill(&s.RecoveryCut, d.RecoveryCut)
	fill(&s.RequestChars, d.RequestChars)
	fill(&s.RequestHead, d.RequestHead)
	fill(&s.RequestTail, d.RequestTail)
	fill(&s.UnderstandingChars, d.UnderstandingChars)
	fill(&s.BlockFiles, d.BlockFiles)
	fill(&s.SummaryMaxTokens, d.SummaryMaxTokens)
	fill(&s.HugeArgs, d.HugeArgs)
	fill(&s.LoopNote, d.LoopNote)
	fill(&s.LoopStop, d.LoopStop)
	fill(&s.LoopWindow, d.LoopWindow)
	share(&s.SummarizeRatio, d.SummarizeRatio)
	share(&s.SummaryShare, d.SummaryShare)
	share(&s.SummaryGain, d.SummaryGain)
	share(&s.SummaryBackoff, d.SummaryBackoff)
	share(&s.OutputShare, d.OutputShare)
	share(&s.FixedWarnShare, d.FixedWarnShare)
	return s
}

// Budget is the context a model may fill: its window less the output
// reserved (maxOutput, else the smaller of 4,096 and 1/8 of the window)
// and a safety margin for the estimate's error (margin, else 2% of the
// window, at least 256); never under a quarter of the window. A window of
// 0 (unknown) counts as 128,000.
func Budget(window, maxOutput, margin int) int {
	if window <= 0 {
		window = UnknownWindow
	}
	if maxOutput <= 0 {
		maxOutput = min(4096, window/8)
	}
	if margin <= 0 {
		margin = max(256, window/50)
	}
	return max(window-maxOutput-margin, window/4)
}

// UnknownWindow is the window assumed for a model whose window no source
// states.
const UnknownWindow = 128000

// Threshold is the summarization trigger for a budget: the fixed cost
// (system prompt, tool schemas, task block: what no summary can shrink)
// plus SummarizeRatio of the room left beside it, at most SummarizeAt. On a
// 16k window with a 6.5k fixed cost that is ~11.9k, not 75% of the budget
// (10.3k), which left a summary ~3k tokens to work in.
func (s Settings) Threshold(budget, fixed int) int {
	room := max(0, budget-fixed)
	return min(s.SummarizeAt, fixed+int(float64(room)*s.SummarizeRatio))
}

// Hard is the hard-fallback limit for a budget: HardLimit, or 95% of a
// smaller budget (above the threshold, which leaves a quarter of the room).
func (s Settings) Hard(budget int) int {
	h := s.HardLimit
	if budget > 0 && budget*19/20 < h {
		h = budget * 19 / 20
	}
	return h
}

// OffloadLimit is the size above which a tool's output is offloaded.
func (s Settings) OffloadLimit(tool string) int {
	if tool == "read_file" || tool == "grep" {
		return s.OffloadCharsRead
	}
	return s.OffloadChars
}
