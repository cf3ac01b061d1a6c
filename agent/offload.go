package agent

import (
	"polly/memory/window"
)

// maxPreviewShare is the largest preview, note included, worth offloading
// for, as a share of the output: a preview must clearly save context, never
// replace an output with something about as large (or larger).
const maxPreviewShare = 0.6

// contextOutput decides what the context gets for a tool output of chars
// characters: the output itself, or — past the offload limit, and only when
// it is at most maxPreviewShare of the output — a preview with its note.
// execID 0 means there is nowhere to offload to; the preview then says the
// output was cut.
func contextOutput(output string, chars int, execID int64, tool string, s window.Settings) (content string, offloaded bool) {
	if chars <= s.OffloadLimit(tool) {
		return output, false
	}
	p := window.Preview(output, execID, s.PreviewHead, s.PreviewTail)
	if float64(len([]rune(p))) > maxPreviewShare*float64(chars) {
		return output, false
	}
	return p, execID != 0
}
