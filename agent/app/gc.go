package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"polly/memory/store"
	"polly/workspace"
)

// GCOptions say what RunGC removes.
type GCOptions struct {
	OlderThan time.Duration // sessions idle longer than this go (0: all but the latest)
	Keep      []string      // sessions never removed (the one in use)
	DryRun    bool          // report only
	Now       time.Time     // zero: time.Now()
}

// GCResult is what RunGC did, or with DryRun would do.
type GCResult struct {
	Cutoff      time.Time
	Store       store.GCReport
	Archives    []string             // archive files removed (or to remove), absolute
	Transcripts []string             // hooks' transcript exports of sessions no longer stored, absolute
	Tidy        []workspace.TidyFile // nil without a workspace
}

// RunGC is the retention pass shared by `polly gc` and the daily
// background run: old sessions out of .agent/polly.db (then VACUUM), their
// archive files out of .agent/archive/, and the workspace's ERRORS.md and
// MEMORY.md tidied (excess moved to its archive/, never deleted). ws may be
// nil.
func RunGC(ctx context.Context, st *store.Store, stateDir string, ws *workspace.Workspace, o GCOptions) (GCResult, error) {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	res := GCResult{Cutoff: now.Add(-o.OlderThan)}
	rep, err := st.GC(ctx, store.GCOptions{Before: res.Cutoff, Keep: o.Keep, DryRun: o.DryRun})
	res.Store = rep
	if err != nil {
		return res, err
	}
	archiveDir := filepath.Join(stateDir, "archive")
	for _, p := range rep.Archives {
		if !filepath.IsAbs(p) {
			p = filepath.Join(stateDir, "..", p)
		}
		p = filepath.Clean(p)
		// Only files Polly wrote there: a stored path is never trusted further.
		if filepath.Dir(p) != archiveDir {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if !o.DryRun {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return res, fmt.Errorf("gc: remove archive: %w", err)
			}
		}
		res.Archives = append(res.Archives, p)
	}
	if res.Transcripts, err = orphanTranscripts(ctx, st, stateDir, res.Cutoff, o.DryRun); err != nil {
		return res, err
	}
	if ws != nil {
		if res.Tidy, err = ws.Tidy(o.DryRun); err != nil {
			return res, fmt.Errorf("gc: %w", err)
		}
	}
	return res, nil
}

// orphanTranscripts removes the transcript exports (.agent/transcripts/,
// written for hooks) of sessions the store no longer holds, when they were
// last written before cutoff.
func orphanTranscripts(ctx context.Context, st *store.Store, stateDir string, cutoff time.Time, dry bool) ([]string, error) {
	files, _ := filepath.Glob(filepath.Join(stateDir, "transcripts", "*.jsonl"))
	var out []string
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || fi.ModTime().After(cutoff) {
			continue
		}
		if _, err := st.Session(ctx, strings.TrimSuffix(filepath.Base(f), ".jsonl")); !errors.Is(err, store.ErrNotFound) {
			continue
		}
		if !dry {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return out, fmt.Errorf("gc: remove transcript: %w", err)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// Lines describes a result for people, one line per kind of change.
func (r GCResult) Lines(dry bool) []string {
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	s := r.Store
	var out []string
	if s.Sessions == 0 {
		out = append(out, "no session idle since before "+r.Cutoff.Local().Format("2006-01-02 15:04")+"; nothing removed from the database")
	} else {
		out = append(out, fmt.Sprintf("%s %d sessions (+%d sub-agent runs) idle since before %s: %d messages, %d tool outputs, %d summaries, %d model calls, %d backups, %d archive files",
			verb, s.Sessions, s.SubSessions, r.Cutoff.Local().Format("2006-01-02 15:04"), s.Messages, s.ToolOutputs, s.Summaries, s.LLMCalls, s.Backups, len(r.Archives)))
	}
	if len(r.Transcripts) > 0 {
		out = append(out, fmt.Sprintf("%s %d hook transcripts of removed sessions", verb, len(r.Transcripts)))
	}
	if s.Kept != "" {
		out = append(out, "kept the latest session "+s.Kept)
	}
	if len(s.Skipped) > 0 {
		out = append(out, fmt.Sprintf("skipped %d sessions another Polly process kept locked: %s (run polly gc again later)", len(s.Skipped), strings.Join(s.Skipped, ", ")))
	}
	switch {
	case dry:
	case s.VacuumError != "":
		out = append(out, fmt.Sprintf("database %s bytes; not compacted: %s", humanize.Comma(s.BytesAfter), s.VacuumError))
	default:
		out = append(out, fmt.Sprintf("database %s → %s bytes (freed %s bytes)", humanize.Comma(s.BytesBefore), humanize.Comma(s.BytesAfter), humanize.Comma(s.BytesBefore-s.BytesAfter)))
	}
	for _, t := range r.Tidy {
		if t.Changed() {
			out = append(out, fmt.Sprintf("%s: %d duplicates merged, %d entries %s to %s", t.Name, t.Merged, t.Moved, map[bool]string{true: "would move", false: "moved"}[dry], t.Archive))
		}
	}
	if dry {
		out = append(out, "dry run: nothing was changed")
	}
	return out
}

// gcMarker is the file whose content is the time of the last background
// retention pass (and what it did), so Polly runs it at most once a day.
const gcMarker = "gc.last"

// gcEvery is how often the background pass runs.
const gcEvery = 24 * time.Hour

// startDailyGC runs the retention pass in the background when the last one
// is more than a day old, never touching keep (the session being opened).
// The marker is written before the pass, so two Polly processes starting
// together run it once; Close waits for it.
// gcGrace is how long Close waits for a running daily pass before it
// cancels it (the pass is then retried at the next start).
const gcGrace = 2 * time.Second

func (a *App) startDailyGC(keep string) {
	if a.Store == nil || a.Config.Retention.Days <= 0 {
		return
	}
	now := time.Now()
	marker := filepath.Join(a.StateDir, gcMarker)
	prev, prevErr := os.ReadFile(marker)
	if prevErr == nil {
		stamp, _, _ := strings.Cut(string(prev), " ")
		if t, err := time.Parse(time.RFC3339, strings.TrimSpace(stamp)); err == nil && now.Sub(t) < gcEvery && !t.After(now) {
			return
		}
	}
	if err := os.WriteFile(marker, []byte(now.UTC().Format(time.RFC3339)+" started\n"), 0o644); err != nil {
		return // a read-only .agent/: no pass rather than one per start
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.stopGC = cancel
	a.gcDone = make(chan struct{})
	go func() {
		defer close(a.gcDone)
		res, err := RunGC(ctx, a.Store, a.StateDir, a.Workspace, GCOptions{
			OlderThan: time.Duration(a.Config.Retention.Days) * 24 * time.Hour, Keep: []string{keep}, Now: now,
		})
		if ctx.Err() != nil {
			// Polly closed before the pass finished (a short headless run):
			// put the marker back so the next start tries again instead
			// of skipping a day with nothing done.
			if prevErr == nil {
				_ = os.WriteFile(marker, prev, 0o644)
			} else {
				_ = os.Remove(marker)
			}
			return
		}
		line := now.UTC().Format(time.RFC3339) + " " + strings.Join(res.Lines(false), "; ")
		if err != nil {
			line += "; error: " + err.Error()
		}
		_ = os.WriteFile(marker, []byte(line+"\n"), 0o644)
	}()
}
