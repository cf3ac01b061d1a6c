// Package owner ties session stores to the Polly install and the project
// that made them. A repository can ship its own .agent/polly.db; a session
// in it must not be continued, or its backups restored, as if Polly had
// made it here.
//
// Each install keeps a random secret in Polly's state directory
// ($XDG_STATE_HOME/polly/install-id). A session records its project path
// and a stamp: the install's public id and an HMAC of the session id and
// the project path under the secret. Only this install can make a stamp
// that verifies, and only for this path; a copied, cloned or committed
// store, another user's, or one from a moved directory does not verify.
package owner

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"polly/memory/store"
)

// File is the install id's name in the state directory.
const File = "install-id"

// secretLen is the secret's size in bytes; the file holds it in hex.
const secretLen = 32

// Install is this Polly install: the secret that stamps its sessions.
type Install struct {
	secret []byte
	id     string // public: names the install in messages
	path   string
}

// ID is the install's public id (12 hex digits), safe to show.
func (in *Install) ID() string { return in.id }

// Path is where the install id is kept.
func (in *Install) Path() string { return in.path }

// CorruptError: the install id file exists but is not one Polly wrote.
// Nothing is replaced: the user decides.
type CorruptError struct {
	Path   string
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("the install id %s is corrupt (%s), so Polly cannot tell the sessions it made from copies; "+
		"nothing was changed. Move it aside (mv %s %s.bad) and Polly makes a new one on its next run; "+
		"sessions stamped with the old one can then be taken over with `polly sessions --adopt`",
		e.Path, e.Reason, e.Path, e.Path)
}

// Load reads the install id in dir, creating it (and dir, private) on
// first use. Two processes creating it at once end up with the same one.
func Load(dir string) (*Install, error) {
	if dir == "" {
		return nil, errors.New("no state directory for the install id ($XDG_STATE_HOME and the home directory are unknown)")
	}
	path := filepath.Join(dir, File)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := create(dir, path); err != nil {
			return nil, fmt.Errorf("create the install id %s: %w", path, err)
		}
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read the install id: %w", err)
	}
	secret, reason := parse(data)
	if reason != "" {
		return nil, &CorruptError{Path: path, Reason: reason}
	}
	return newInstall(secret, path), nil
}

func newInstall(secret []byte, path string) *Install {
	sum := sha256.Sum256(append([]byte("polly install id\x00"), secret...))
	return &Install{secret: secret, id: hex.EncodeToString(sum[:6]), path: path}
}

// parse reads the file's content; reason says what is wrong with it.
func parse(data []byte) (secret []byte, reason string) {
	text := strings.TrimSpace(string(data))
	if len(text) != 2*secretLen {
		return nil, fmt.Sprintf("want %d hex digits, found %d bytes", 2*secretLen, len(data))
	}
	secret, err := hex.DecodeString(text)
	if err != nil {
		return nil, "not hexadecimal"
	}
	return secret, ""
}

// create writes a fresh secret without ever replacing one: a private temp
// file linked into place (link fails if another process got there first).
func create(dir, path string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	secret := make([]byte, secretLen)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".install-id-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(hex.EncodeToString(secret) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(f.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// stampVersion prefixes stamps so a later format can be told apart.
const stampVersion = "v1"

// Stamp is what a session made by this install in project records.
func (in *Install) Stamp(sessionID, project string) string {
	return stampVersion + ":" + in.id + ":" + in.mac(sessionID, project)
}

func (in *Install) mac(sessionID, project string) string {
	m := hmac.New(sha256.New, in.secret)
	fmt.Fprintf(m, "polly session\x00%s\x00%s", sessionID, project)
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// Judge says whether this install made session s in project (its
// config.ProjectKey), and if not, why not in words a user can act on ("" when
// it did).
func (in *Install) Judge(s store.Session, project string) string {
	version, rest, _ := strings.Cut(s.Owner, ":")
	id, mac, _ := strings.Cut(rest, ":")
	switch {
	case s.Owner == "":
		return "it carries no owner stamp: a Polly from before sessions were tied to their machine made it, or it was copied, committed or written by hand"
	case version != stampVersion || id == "" || mac == "":
		return "its owner stamp is not one this Polly writes (a newer Polly, or written by hand)"
	case id != in.id:
		return fmt.Sprintf("another Polly install (%s) made it, not this one (%s): it was copied from another user or machine, or shipped with the repository", id, in.id)
	case hmac.Equal([]byte(mac), []byte(in.mac(s.ID, project))):
		return ""
	case s.Project != "" && s.Project != project && hmac.Equal([]byte(mac), []byte(in.mac(s.ID, s.Project))):
		return fmt.Sprintf("it was made in %s, and this project is %s: the directory was moved or copied", s.Project, project)
	}
	return "its owner stamp does not verify: it was edited, or copied from another project"
}

// Checker judges stored sessions for one project.
type Checker struct {
	Install *Install // nil: the install id could not be had (Problem says why)
	Project string   // config.ProjectKey of the project
	Problem error
}

// Check returns nil for a session this install made in this project, and
// a *ForeignError saying what it is otherwise. Without an install id no
// session is accepted.
func (c Checker) Check(s store.Session) error {
	if c.Install == nil {
		return fmt.Errorf("cannot tell who made session %s (%v), so it is not used", s.ID, c.Problem)
	}
	why := c.Install.Judge(s, c.Project)
	if why == "" {
		return nil
	}
	return &ForeignError{Session: s, Why: why}
}

// Stamp stamps a new session (store.Stamper).
// Without an install id the session is left unstamped.
func (c Checker) Stamp(sessionID string) (project, stamp string) {
	if c.Install == nil {
		return c.Project, ""
	}
	return c.Project, c.Install.Stamp(sessionID, c.Project)
}

// Own reports whether this install made s in this project.
func (c Checker) Own(s store.Session) bool { return c.Check(s) == nil }

// ForeignError: a session Polly did not make here. It is used only once
// the user adopts it.
type ForeignError struct {
	Session store.Session
	Why     string
}

func (e *ForeignError) Error() string {
	s := e.Session
	return fmt.Sprintf("session %s (%q, created %s) was not made by Polly here: %s. "+
		"Polly does not continue it or restore its files without your say-so; to take it over, run `polly sessions --adopt %s` (it shows what it is first)",
		s.ID, s.Title, s.CreatedAt.Local().Format(time.DateTime), e.Why, s.ID)
}
