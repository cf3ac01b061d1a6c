// Package window decides what of a conversation goes into the model's
// context window. Build is a pure function of (history, task state,
// settings, budget): no I/O, no clock, no randomness, so every rule — task
// anchors, stale-output shrinking, failed-attempt fading, hard fallback,
// context-length recovery — is tested without a model. The agent loop does
// the I/O around it (storing anchors, writing checkpoints, summarizing).
package window

// Settings are the numbers of PRODUCT §3. Zero values mean the defaults.
type Settings struct {
	AnchorEvery      int     // a task anchor every N tool calls (5)
	CheckpointEvery  int     // active_task.md every N tool calls (30)
	OffloadChars     int     // tool outputs longer than this are offloaded (2,000)
	OffloadCharsRead int     // … for read_file and grep (8,000)
	PreviewHead      int     // characters of an offloaded output kept from its start (500)
	PreviewTail      int     // … and from its end, where errors land (1,500)
	StaleAfter       int     // tool outputs more than N messages from the end shrink (15)
	SummarizeAt      int     // summarize past this many tokens (40,000)
	SummarizeRatio   float64 // … or this share of a smaller window (0.75)
	KeepRecent       int     // messages kept raw after a summary (15)
	HardLimit        int     // hard fallback past this many tokens (120,000)
	HardKeep         int     // messages the hard fallback keeps (20)
	RecentActions    int     // tool actions in a checkpoint (20)
	RecoveryKeep     int     // tool outputs kept whole after a context-length error (3)
	RecoveryCut      int     // … the others cut to this many characters (1,000)
	// The task block.
	RequestChars       int // a request or follow-up longer than this is shown as head + tail + id (8,000)
	RequestHead        int // … characters of its start (3,000)
	RequestTail        int // … and of its end (3,000)
	UnderstandingChars int // the expanded understanding is clipped here (4,000)
	BlockFiles         int // files read / written listed in the block (40)
	// Summaries.
	SummaryMaxTokens int     // a summary's cap in tokens, also the summarizer's max output (8,000)
	SummaryShare     float64 // … and at most this share of the budget (1/8)
	HugeArgs         int     // tool-call arguments longer than this shrink even when recent (50,000)
	LoopNote         int     // the same call with the same result this many times in a row: a harness note (3)
	LoopStop         int     // … this many times: the run stops (8)
}

// Defaults returns PRODUCT §3's numbers.
func Defaults() Settings {
	return Settings{
		AnchorEvery:      5,
		CheckpointEvery:  30,
		OffloadChars:     2000,
		OffloadCharsRead: 8000,
		PreviewHead:      500,
		PreviewTail:      1500,
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
		HugeArgs:           50000,
		LoopNote:           3,
		LoopStop:           8,
	}
}

// WithDefaults fills zero fields from Defaults.
func (s Settings) WithDefaults() Settings {
	d := Defaults()
	fill := func(v *int, dv int) {
		if *v <= 0 {
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
	if s.SummaryShare <= 0 || s.SummaryShare > 1 {
		s.SummaryShare = d.SummaryShare
	}
	if s.SummarizeRatio <= 0 || s.SummarizeRatio > 1 {
		s.SummarizeRatio = d.SummarizeRatio
	}
	return s
}

// Threshold is the summarization trigger for a model window: SummarizeAt,
// or SummarizeRatio of the window when that is smaller.
func (s Settings) Threshold(window int) int {
	t := s.SummarizeAt
	if window > 0 {
		if w := int(float64(window) * s.SummarizeRatio); w < t {
			t = w
		}
	}
	return t
}

// Hard is the hard-fallback limit for a model window.
func (s Settings) Hard(window int) int {
	h := s.HardLimit
	if window > 0 && window*9/10 < h {
		h = window * 9 / 10
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
