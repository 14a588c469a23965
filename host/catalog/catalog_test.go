package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/assets/fileio"
	"amid/host/store"
	"amid/plugins/protocol"
)

func setup(t *testing.T) (*Catalog, string, string) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "amid.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b, u := t.TempDir(), t.TempDir()
	return &Catalog{Builtin: b, User: u, Store: st}, b, u
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestScanTrustAndChange(t *testing.T) {
	c, b, u := setup(t)
	write(t, filepath.Join(b, "amid-plugin-seg"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(u, "amid-plugin-det"), "#!/bin/sh\necho det\n", 0o755)
	write(t, filepath.Join(u, "amid-plugin-noexec"), "data", 0o644)
	write(t, filepath.Join(u, "readme.txt"), "not a plugin", 0o755)
	if err := os.Mkdir(filepath.Join(u, "amid-plugin-dir"), 0o755); err != nil {
		t.Fatal(err)
	}

	es, err := c.Scan()
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || es[0].Name != "det" || es[1].Name != "noexec" || es[2].Name != "seg" {
		t.Fatalf("Scan = %+v", es)
	}
	if es[0].State != Untrusted || !errors.Is(es[0].Usable(), ErrUntrusted) {
		t.Errorf("new plugin: %+v", es[0])
	}
	if es[1].State != NotExecutable || !errors.Is(es[1].Usable(), ErrNotExecutable) {
		t.Errorf("non-executable plugin: %+v", es[1])
	}
	if err := c.Trust(&es[1]); !errors.Is(err, ErrNotExecutable) {
		t.Errorf("trusting a non-executable plugin: %v", err)
	}
	if !es[2].Builtin {
		t.Errorf("seg should be built in: %+v", es[2])
	}

	if err := c.Trust(&es[0]); err != nil {
		t.Fatal(err)
	}
	e, err := c.Find("det")
	if err != nil || e.State != Trusted || e.Usable() != nil {
		t.Fatalf("after trust: %+v, %v", e, err)
	}

	// Replacing the binary revokes the trust.
	write(t, e.Path, "#!/bin/sh\necho evil\n", 0o755)
	e, _ = c.Find("det")
	if e.State != Changed || !errors.Is(e.Usable(), ErrChanged) {
		t.Errorf("after replacement: %+v", e)
	}
	if _, err := c.Find("nope"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Find(nope) = %v", err)
	}
	evs, _ := c.Store.Events("", "")
	if len(evs) != 1 || evs[0].Kind != "trust" {
		t.Errorf("events = %+v", evs)
	}
}

func TestUserShadowsBuiltin(t *testing.T) {
	c, b, u := setup(t)
	write(t, filepath.Join(b, "amid-plugin-seg"), "builtin", 0o755)
	write(t, filepath.Join(u, "amid-plugin-seg"), "user", 0o755)
	e, err := c.Find("seg")
	if err != nil {
		t.Fatal(err)
	}
	if e.Builtin || e.Path != filepath.Join(u, "amid-plugin-seg") || len(e.Shadows) != 1 {
		t.Errorf("Find(seg) = %+v", e)
	}
}

func TestMissingFolders(t *testing.T) {
	c, _, _ := setup(t)
	c.Builtin = filepath.Join(c.Builtin, "absent")
	c.User = ""
	es, err := c.Scan()
	if err != nil || len(es) != 0 {
		t.Errorf("Scan = %v, %v", es, err)
	}
}

func TestPluginName(t *testing.T) {
	for in, want := range map[string]string{
		"amid-plugin-seg": "seg", "amid-plugin-seg.exe": "seg", "amid-plugin-": "",
		"amid-plugin-a.b": "", "other": "", "amid-plugin-.seg.tmp": "",
	} {
		got, ok := pluginName(in)
		if got != want || ok != (want != "") {
			t.Errorf("pluginName(%q) = %q, %v", in, got, ok)
		}
	}
}

// TrustDescribed keeps the trust of a plugin that describes itself, with its version and
// kinds, and puts back the previous trust record of one that cannot.
func TestTrustDescribed(t *testing.T) {
	c, _, u := setup(t)
	path := filepath.Join(u, "amid-plugin-seg")
	write(t, path, "#!/bin/sh\necho v1\n", 0o755)
	desc := &protocol.DescribeResponse{Name: "seg", Version: "1.2.0", Tasks: []protocol.TaskKind{{Kind: "segmentation", Dims: []int{2, 3}}, {Kind: "iqa"}}}
	describes := func(*Entry) (*protocol.DescribeResponse, error) { return desc, nil }
	broken := errors.New("exit status 3")
	fails := func(*Entry) (*protocol.DescribeResponse, error) { return nil, broken }

	// A new plugin that cannot describe itself stays untrusted.
	e, _ := c.Find("seg")
	if _, err := c.TrustDescribed(e, fails); !errors.Is(err, broken) {
		t.Fatalf("trusting a plugin that cannot describe itself: %v", err)
	}
	if e.State != Untrusted {
		t.Errorf("entry state %s after a failed trust, want untrusted", e.State)
	}
	if e, _ := c.Find("seg"); e.State != Untrusted {
		t.Errorf("scanned state %s after a failed trust, want untrusted", e.State)
	}

	// One that can is trusted with what it said.
	d, err := c.TrustDescribed(e, describes)
	if err != nil || d != desc {
		t.Fatalf("TrustDescribed = %v, %v", d, err)
	}
	e1, _ := c.Find("seg")
	if e1.State != Trusted || e1.Record.Version != "1.2.0" || strings.Join(e1.Record.Kinds, ",") != "segmentation-2d,segmentation-3d,iqa" {
		t.Errorf("after trust: state %s, record %+v", e1.State, e1.Record)
	}

	// A changed binary that cannot describe itself keeps the old binary's record: it is
	// refused as changed, and the old trust is not lost.
	write(t, path, "#!/bin/sh\necho v2\n", 0o755)
	e2, _ := c.Find("seg")
	if _, err := c.TrustDescribed(e2, fails); !errors.Is(err, broken) {
		t.Fatalf("trusting a changed plugin that cannot describe itself: %v", err)
	}
	e3, _ := c.Find("seg")
	if e3.State != Changed || e2.State != Changed || e3.Record.TrustedSHA256 != e1.SHA256 || e3.Record.Version != "1.2.0" {
		t.Errorf("after a failed trust of a changed binary: state %s (entry %s), record %+v", e3.State, e2.State, e3.Record)
	}
	evs, err := c.Store.Events("", "")
	if err != nil {
		t.Fatal(err)
	}
	withdrawn := 0
	for _, ev := range evs {
		if strings.Contains(ev.Message, "was withdrawn") {
			withdrawn++
		}
	}
	if withdrawn != 2 {
		t.Errorf("%d withdrawals logged, want 2", withdrawn)
	}
}

// A build that names its built-in plugins' sha256 trusts exactly those binaries in the
// built-in folder: not a changed one (refused with a sentence saying so, until the user
// trusts it), not a copy in the user's folder, not a plugin the build does not name.
func TestBuiltinSums(t *testing.T) {
	c, b, u := setup(t)
	seg, det, extra := filepath.Join(b, "amid-plugin-seg"), filepath.Join(b, "amid-plugin-det"), filepath.Join(b, "amid-plugin-extra")
	write(t, seg, "#!/bin/sh\necho seg\n", 0o755)
	write(t, det, "#!/bin/sh\necho det\n", 0o755)
	write(t, extra, "#!/bin/sh\necho extra\n", 0o755)
	sum := func(p string) string {
		s, err := fileio.SHA256(p)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	c.BuiltinSums = map[string]string{"seg": sum(seg), "det": sum(det)}

	e, err := c.Find("seg")
	if err != nil || e.State != Trusted || !e.AsBuilt() || e.Usable() != nil || e.Record == nil || e.Record.TrustedSHA256 != sum(seg) {
		t.Fatalf("a built-in plugin as built: %+v, %v", e, err)
	}
	if e, _ := c.Find("extra"); e.State != Untrusted {
		t.Errorf("a built-in plugin the build does not name: state %s, want untrusted", e.State)
	}
	if evs, _ := c.Store.Events("", ""); len(evs) != 0 {
		t.Errorf("trust by the build wrote %d events to the store, want none (nothing was decided)", len(evs))
	}

	// Changed after the build: refused, and the sentence says it is not the built binary.
	write(t, det, "#!/bin/sh\necho evil\n", 0o755)
	e, _ = c.Find("det")
	err = e.Usable()
	if e.State != Changed || !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "built-in plugin det") ||
		!strings.Contains(err.Error(), "is not the binary this AMID was built with") {
		t.Errorf("a changed built-in plugin: state %s, %v", e.State, err)
	}
	// The user may still trust it, as any other plugin.
	if err := c.Trust(e); err != nil {
		t.Fatal(err)
	}
	if e, _ := c.Find("det"); e.State != Trusted || e.AsBuilt() {
		t.Errorf("a changed built-in plugin the user trusted: state %s, as built %v", e.State, e.AsBuilt())
	}

	// The same binary in the user's folder is the user's plugin, trusted only by the user.
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(u, "amid-plugin-seg"), string(data), 0o755)
	if e, _ := c.Find("seg"); e.Builtin || e.State != Untrusted {
		t.Errorf("a copy of a built-in plugin in the user's folder: builtin %v, state %s; want the user's, untrusted", e.Builtin, e.State)
	}

	// Without the sums nothing is trusted by itself.
	c.BuiltinSums = nil
	if e, _ := c.Find("extra"); e.State != Untrusted {
		t.Errorf("without sums: state %s", e.State)
	}
	os.Remove(filepath.Join(u, "amid-plugin-seg"))
	if e, _ := c.Find("seg"); e.State != Untrusted {
		t.Errorf("the built-in seg without sums: state %s, want untrusted", e.State)
	}
}
