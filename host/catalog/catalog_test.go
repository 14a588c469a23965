package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"amid/host/store"
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
