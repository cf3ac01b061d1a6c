package tui

import (
	"fmt"
	"strings"
)

// The state a handoff card item shows: waiting for the next message, or
// given with it.
const (
	handoffPending = "goes with your next message"
	handoffSent    = "given with your message"
)

// handoffText is the card's line in the transcript of the persona that
// receives it: who it is from, and what it carries.
func handoffText(from, card, state string) string {
	return fmt.Sprintf("handoff card from %s (%s): %s", from, state, cardGist(card))
}

// cardGist says what a handoff card carries, from its labelled lines
// (agent/handoff.go writes them): the task, the plan step, the files, the
// last result.
func cardGist(card string) string {
	var parts []string
	for _, l := range strings.Split(card, "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(l), ": ")
		if !ok {
			continue
		}
		switch key {
		case "Current task":
			parts = append(parts, "task “"+clip(val, 80)+"”")
		case "Plan step":
			parts = append(parts, "plan step "+clip(val, 60))
		case "Files touched":
			n := len(strings.Split(val, ", "))
			parts = append(parts, plural(n, "file")+" touched")
		case "Last result":
			parts = append(parts, "the last result")
		}
	}
	if strings.Contains(card, "Full task state: ") {
		parts = append(parts, "the checkpoint's path")
	}
	if len(parts) == 0 {
		return firstContentLine(card)
	}
	return strings.Join(parts, " · ")
}

// receiveHandoff shows a card in the receiving persona's transcript, once:
// a newer card replaces one still waiting (the agent keeps only the last).
func (m *Model) receiveHandoff(to *personaState, from, card string) {
	if old := to.handoff; old != nil {
		to.tr.remove(old)
	}
	to.handoff = to.tr.add(&item{kind: kHandoff, text: handoffText(from, card, handoffPending)})
}

// handoffFrom reads the sender's name from a stored card's header line
// ("[HANDOFF from Polly (default) — …").
func handoffFrom(card string) string {
	_, rest, ok := strings.Cut(card, "[HANDOFF from ")
	if !ok {
		return "another persona"
	}
	name, _, _ := strings.Cut(rest, " (")
	return name
}
