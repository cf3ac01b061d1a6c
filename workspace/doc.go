// Package workspace manages Polly's Markdown memory: the files under
// ~/.agent/workspace/ (SOUL.md, TOOLS.md, AGENTS.md, MEMORY.md, the daily
// logs in memory/ and the .learnings/ files), created from the embedded
// .agent-template/ and never overwritten.
//
// # System prompt
//
// SystemPrompt assembles, each part under its own "# …" heading:
//
//  1. SOUL.md — who the team is and the rules every persona follows.
//  2. the persona prompt — who "you" are in this conversation. It comes right
//     after SOUL so the role frames everything that follows, while the text
//     shared by all personas stays a common prefix.
//  3. TOOLS.md — how to use the tools.
//  4. AGENTS.md — the workspace's delegation patterns.
//  5. MEMORY.md — durable facts.
//  6. learnings — the most-used and newest insights of LEARNINGS.md, one
//     line each, and the newest feature requests (so none is filed twice).
//  7. the daily logs of yesterday and today — recent history.
//  8. the project's own AGENTS.md — last, because it is the most specific:
//     as in Codex, a project's instructions come after (and win over) the
//     general ones.
//
// Stable text comes first and the files that change during a day (MEMORY.md,
// the logs) come late, so an edit there leaves the prefix before it cacheable.
//
// Every part is capped (MEMORY.md 200 lines / 25 KB, the core files 16 KB,
// each daily log its newest 8 KB, the project AGENTS.md 32 KB) and a cut is
// announced in the prompt. Files are read only up to their cap and cached by
// path, size, mtime and identity, so an edit shows up on the next call
// without a restart. A missing or empty file is skipped.
//
// # Writes
//
// Every write (SaveFact, LogError, LogToolError, LogLearning,
// RequestFeature, DailyLog, LogTaskEnd, LearnFacts) replaces its file
// atomically (temp file + rename) while holding an in-process mutex and an
// flock on .polly.lock, so goroutines and separate Polly processes can
// write at once without losing entries. Each is also an Edit (FactEdit,
// ErrorEdit, …) that Preview shows before Apply makes it, so the
// permission gate can ask with the diff; and each records its Provenance
// as a marker in the file (see provenance.go), which the system prompt
// leaves out.
package workspace
