// Package catalog finds plugin executables and decides whether the host may start them.
//
// A plugin is an executable named amid-plugin-NAME in the built-in folder (plugins next to
// the amid binary) or in the user's plugin folder; a user plugin shadows a built-in one of
// the same name. Each binary is identified by its sha256. A binary the user has not trusted,
// or one whose sha256 changed since it was trusted, is refused until the user trusts it
// (amid plugins trust NAME); the trust is recorded in the store. Both front ends trust
// through TrustDescribed, which keeps the trust only of a plugin that describes itself.
//
// The built-in plugins need no such step when the build says what they are: `make build`
// builds them first and embeds their sha256 in the AMID programs (host.Open passes them as
// BuiltinSums). A plugin in the built-in folder whose sha256 is the one its name has there
// is trusted; one whose sha256 differs is refused with a sentence saying it is not the
// binary AMID was built with, until the user trusts it as any other. Nothing else is
// trusted without the user: not a copy of a built-in binary in the user's folder, not a
// plugin the build does not name, and nothing at all in a build without the sums.
package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"amid/assets/fileio"
	"amid/host/store"
	"amid/plugins/protocol"
)

// Prefix starts every plugin executable's name.
const Prefix = "amid-plugin-"

// Errors returned by Entry.Usable and Catalog lookups.
var (
	ErrUnknown       = errors.New("no such plugin")
	ErrUntrusted     = errors.New("plugin is not trusted")
	ErrChanged       = errors.New("plugin changed since it was trusted")
	ErrNotExecutable = errors.New("plugin file is not executable")
)

// State says whether a plugin may be started.
type State string

// States.
const (
	Trusted       State = "trusted"
	Untrusted     State = "untrusted"      // never trusted
	Changed       State = "changed"        // trusted with another sha256
	NotExecutable State = "not-executable" // missing execute permission or unreadable
)

// Entry is one plugin found on disk.
type Entry struct {
	Name     string        `json:"name"`
	Path     string        `json:"path"`
	Builtin  bool          `json:"builtin"`
	SHA256   string        `json:"sha256"`
	State    State         `json:"state"`
	Problem  string        `json:"problem,omitempty"` // one sentence when not trusted
	Shadows  []string      `json:"shadows,omitempty"` // same-named plugins this one hides
	Record   *store.Plugin `json:"-"`
	Modified time.Time     `json:"-"`
	// BuiltSHA256 is the sha256 the build names for a built-in plugin (BuiltinSums), "" when
	// it names none.
	BuiltSHA256 string `json:"built_sha256,omitempty"`
}

// Usable returns nil for a trusted entry and otherwise an error that says why it is refused.
func (e *Entry) Usable() error {
	switch e.State {
	case Trusted:
		return nil
	case Untrusted:
		return fmt.Errorf("%w: %s (%s); run: amid plugins trust %s", ErrUntrusted, e.Name, e.Path, e.Name)
	case Changed:
		if e.BuiltSHA256 != "" {
			return notAsBuilt(fmt.Sprintf("built-in plugin %s (%s) is not the binary this AMID was built with (sha256 %s, built with %s); rebuild AMID (make build), or run: amid plugins trust %s",
				e.Name, e.Path, e.SHA256, e.BuiltSHA256, e.Name))
		}
		return fmt.Errorf("%w: %s (%s) now has sha256 %s; run: amid plugins trust %s", ErrChanged, e.Name, e.Path, e.SHA256, e.Name)
	default:
		return fmt.Errorf("%w: %s", ErrNotExecutable, e.Problem)
	}
}

// AsBuilt reports whether e is trusted as a built-in plugin this build of AMID was made
// with (Catalog.BuiltinSums) rather than by the user.
func (e *Entry) AsBuilt() bool {
	return e.State == Trusted && e.BuiltSHA256 != "" && e.BuiltSHA256 == e.SHA256
}

// notAsBuilt is the refusal of a changed built-in plugin: one sentence, matching
// ErrChanged.
type notAsBuilt string

func (e notAsBuilt) Error() string        { return string(e) }
func (e notAsBuilt) Is(target error) bool { return target == ErrChanged }

// Catalog scans plugin folders against the trust recorded in a store.
type Catalog struct {
	Builtin string // the built-in folder, may be empty
	User    string // the user's folder, may be empty
	Store   *store.Store
	// BuiltinSums are the sha256 (hex) of the built-in plugins this build of AMID was made
	// with, by name: a plugin of the built-in folder with its name's sum is trusted without
	// the user. Empty: every plugin needs the user's trust.
	BuiltinSums map[string]string
}

// Scan lists the plugins in both folders, by name. Missing folders are empty.
func (c *Catalog) Scan() ([]Entry, error) {
	byName := map[string]*Entry{}
	for _, d := range []struct {
		dir     string
		builtin bool
	}{{c.Builtin, true}, {c.User, false}} {
		if d.dir == "" {
			continue
		}
		des, err := os.ReadDir(d.dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("plugin folder %s: %w", d.dir, err)
		}
		for _, de := range des {
			name, ok := pluginName(de.Name())
			if !ok {
				continue
			}
			e := c.inspect(filepath.Join(d.dir, de.Name()), name, d.builtin)
			if e == nil {
				continue
			}
			if old := byName[name]; old != nil {
				e.Shadows = append(old.Shadows, old.Path)
			}
			byName[name] = e
		}
	}
	out := make([]Entry, 0, len(byName))
	for _, e := range byName {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Find scans and returns the entry named name (errors wrap ErrUnknown when absent).
func (c *Catalog) Find(name string) (*Entry, error) {
	es, err := c.Scan()
	if err != nil {
		return nil, err
	}
	for i := range es {
		if es[i].Name == name {
			return &es[i], nil
		}
	}
	return nil, fmt.Errorf("%w: %s (looked in %s and %s)", ErrUnknown, name, c.Builtin, c.User)
}

// Trust records the entry's current sha256 as trusted. An entry that is not executable
// cannot be trusted.
func (c *Catalog) Trust(e *Entry) error {
	if e.State == NotExecutable {
		return e.Usable()
	}
	rec := &store.Plugin{Name: e.Name}
	if e.Record != nil {
		*rec = *e.Record
		if rec.TrustedSHA256 != e.SHA256 {
			rec.Version, rec.Kinds = "", nil // the description belonged to the old binary
		}
	}
	rec.Path, rec.TrustedSHA256, rec.TrustedAt = e.Path, e.SHA256, time.Now().UTC()
	ev := &store.Event{Plugin: e.Name, Kind: "trust", Message: fmt.Sprintf("the user trusted plugin %s (%s) with sha256 %s", e.Name, e.Path, e.SHA256)}
	if err := c.Store.PutPlugin(rec, ev); err != nil {
		return err
	}
	e.Record, e.State, e.Problem = rec, Trusted, ""
	return nil
}

// TrustDescribed trusts e as it is now and asks the plugin, through describe (which starts
// it), what it can do; its version and task kinds (see Kinds) are recorded with the trust. A
// plugin that cannot describe itself is not trusted: the trust record it had before (none,
// or the one of an earlier binary) is put back, the withdrawal is logged in the store, and
// the error wraps describe's. It returns the plugin's description.
func (c *Catalog) TrustDescribed(e *Entry, describe func(*Entry) (*protocol.DescribeResponse, error)) (*protocol.DescribeResponse, error) {
	var before *store.Plugin
	if e.Record != nil {
		saved := *e.Record
		before = &saved
	}
	if err := c.Trust(e); err != nil {
		return nil, err
	}
	d, err := describe(e)
	if err != nil {
		restore := before
		if restore == nil {
			restore = &store.Plugin{Name: e.Name, Path: e.Path}
		}
		ev := &store.Event{Plugin: e.Name, Kind: "trust", Message: fmt.Sprintf("trust in plugin %s was withdrawn: %v", e.Name, err)}
		if perr := c.Store.PutPlugin(restore, ev); perr != nil {
			return nil, fmt.Errorf("withdraw trust in plugin %s: %w", e.Name, perr)
		}
		e.Record, e.Problem = restore, fmt.Sprintf("plugin %s cannot describe itself: %v", e.Name, err)
		switch restore.TrustedSHA256 {
		case "":
			e.State = Untrusted
		case e.SHA256: // it was trusted as it is before this attempt
			e.State, e.Problem = Trusted, ""
		default:
			e.State = Changed
		}
		return nil, fmt.Errorf("plugin %s is not trusted: %w", e.Name, err)
	}
	rec := *e.Record
	rec.Version, rec.Kinds = d.Version, Kinds(d)
	if err := c.Store.PutPlugin(&rec, nil); err != nil {
		return nil, fmt.Errorf("record plugin %s's description: %w", e.Name, err)
	}
	e.Record = &rec
	return d, nil
}

// Kinds lists the task kinds a plugin offers as recorded with its trust: KIND-Nd for each
// dimensionality of a kind, or KIND alone when it names none.
func Kinds(d *protocol.DescribeResponse) []string {
	var ks []string
	for _, t := range d.Tasks {
		for _, dim := range t.Dims {
			ks = append(ks, fmt.Sprintf("%s-%dd", t.Kind, dim))
		}
		if len(t.Dims) == 0 {
			ks = append(ks, t.Kind)
		}
	}
	return ks
}

// pluginName returns NAME for amid-plugin-NAME (and amid-plugin-NAME.exe).
func pluginName(file string) (string, bool) {
	if !strings.HasPrefix(file, Prefix) {
		return "", false
	}
	name := strings.TrimSuffix(strings.TrimPrefix(file, Prefix), ".exe")
	if name == "" || strings.ContainsAny(name, ". ") {
		return "", false
	}
	return name, true
}

// inspect hashes a candidate file and classifies it; it returns nil for folders.
func (c *Catalog) inspect(path, name string, builtin bool) *Entry {
	e := &Entry{Name: name, Path: path, Builtin: builtin}
	fi, err := os.Stat(path)
	if err != nil {
		e.State, e.Problem = NotExecutable, fmt.Sprintf("plugin %s: %v", name, err)
		return e
	}
	if fi.IsDir() {
		return nil
	}
	e.Modified = fi.ModTime()
	sum, err := fileio.SHA256(path)
	if err != nil {
		e.State, e.Problem = NotExecutable, fmt.Sprintf("plugin %s: %v", name, err)
		return e
	}
	e.SHA256 = sum
	if rec, err := c.Store.Plugin(name); err == nil {
		e.Record = rec
	}
	if builtin {
		e.BuiltSHA256 = c.BuiltinSums[name]
	}
	switch {
	case fi.Mode().Perm()&0o111 == 0:
		e.State, e.Problem = NotExecutable, fmt.Sprintf("plugin %s (%s) is not executable (mode %v)", name, path, fi.Mode().Perm())
	case e.BuiltSHA256 != "" && e.BuiltSHA256 == sum:
		e.State = Trusted
		if e.Record == nil || e.Record.TrustedSHA256 != sum { // the build trusts it, not a record
			e.Record = &store.Plugin{Name: name, Path: path, TrustedSHA256: sum}
		}
	case e.Record != nil && e.Record.TrustedSHA256 == sum:
		e.State = Trusted
	case e.BuiltSHA256 != "":
		e.State, e.Problem = Changed, fmt.Sprintf("built-in plugin %s is not the binary this AMID was built with (sha256 %s, built with %s)", name, short(sum), short(e.BuiltSHA256))
	case e.Record == nil || e.Record.TrustedSHA256 == "":
		e.State, e.Problem = Untrusted, fmt.Sprintf("plugin %s is new and not trusted yet", name)
	default:
		e.State, e.Problem = Changed, fmt.Sprintf("plugin %s changed since it was trusted (sha256 %s, trusted %s)", name, short(sum), short(e.Record.TrustedSHA256))
	}
	return e
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
