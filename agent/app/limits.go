package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"polly/memory/task"
)

// limitFile keeps the context limits providers stated in context-length
// errors, one JSON object model → tokens, in the user's cache dir. It is
// the small store behind agent.LimitStore; a model catalogue can replace
// it.
type limitFile struct {
	path string
	mu   sync.Mutex
}

// openLimits returns the store in dir, or nil when there is no cache dir
// (limits then last one session).
func openLimits(dir string) *limitFile {
	if dir == "" {
		return nil
	}
	return &limitFile{path: filepath.Join(dir, "context-limits.json")}
}

func (l *limitFile) read() (map[string]int, error) {
	b, err := os.ReadFile(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := map[string]int{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", l.path, err)
	}
	return m, nil
}

// Limit is the stored limit of model.
func (l *limitFile) Limit(model string) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m, err := l.read()
	if err != nil {
		return 0, false
	}
	n, ok := m[model]
	return n, ok && n > 0
}

// SaveLimit stores model's limit (atomically: temp file and rename).
func (l *limitFile) SaveLimit(model string, tokens int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	m, err := l.read()
	if err != nil {
		m = map[string]int{} // an unreadable file is replaced, not fatal
	}
	m[model] = tokens
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return task.WriteFileAtomic(l.path, append(b, '\n'))
}

// Where is the file's path.
func (l *limitFile) Where() string { return l.path }
