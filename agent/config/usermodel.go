package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// SaveUserModel sets the default model ("model") in the user's config file
// ($POLLY_CONFIG, else $XDG_CONFIG_HOME/polly/config.json, else
// ~/.config/polly/config.json), creating the file if need be, and returns
// its path. The other settings stay as they are (re-indented, keys
// sorted); a file that is not a JSON object is refused, unchanged.
func SaveUserModel(home string, getenv func(string) string, model string) (string, error) {
	path, _, err := userConfigPath(home, getenv)
	if err != nil {
		return "", err
	}
	if path == "" {
		return "", errors.New("no user config file is known (set $XDG_CONFIG_HOME or $HOME)")
	}
	doc := map[string]json.RawMessage{}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return path, fmt.Errorf("read %s: %w", path, err)
	case len(bytes.TrimSpace(data)) > 0:
		if err := json.Unmarshal(data, &doc); err != nil {
			return path, fmt.Errorf("%s is not a JSON object (%v); set \"model\" in it by hand", path, err)
		}
	}
	v, _ := json.Marshal(model)
	doc["model"] = v
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return path, fmt.Errorf("write %s: %w", path, err)
	}
	if err := writeFileAtomic(path, append(out, '\n')); err != nil {
		return path, fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}
