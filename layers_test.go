package main

import (
	"os/exec"
	"strings"
	"testing"

	"amid/assets/ci"
)

// TestLayers checks the import graph's layers (README, ARCHITECTURE.md): assets/ is the
// bottom (bundled files, the real-image cache, the file writer and hash, the CI test) and
// imports no other layer; viewer/ (formats, the volume model, widgets) imports no plugin,
// host or app package;
// plugins/ imports neither host/ nor app/ (plugins are built without the host); host/
// imports no app/ package; and only this package, the desktop program's main, imports
// Fyne's driver (fyne.io/fyne/v2/app), so every screen stays testable headless. Test
// files are not checked: a test may compare against a higher layer.
func TestLayers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		ci.Missing(t, "the go command is not on the PATH")
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := map[string][]string{
		"amid/assets/":  {"amid/viewer/", "amid/plugins/", "amid/host/", "amid/app/"},
		"amid/viewer/":  {"amid/plugins/", "amid/host/", "amid/app/"},
		"amid/plugins/": {"amid/host/", "amid/app/"},
		"amid/host/":    {"amid/app/"},
	}
	pkgs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, imports := f[0], f[1:]
		pkgs++
		for _, imp := range imports {
			for layer, above := range forbidden {
				for _, a := range above {
					if strings.HasPrefix(pkg, layer) && strings.HasPrefix(imp, a) {
						t.Errorf("%s imports %s: a package of %s* imports none of %s*", pkg, imp, layer, a)
					}
				}
			}
			if imp == "fyne.io/fyne/v2/app" && pkg != "amid" {
				t.Errorf("%s imports Fyne's driver fyne.io/fyne/v2/app: only main.go may", pkg)
			}
		}
	}
	if pkgs < 50 { // the module has over 60 packages; fewer means go list saw a part of it
		t.Errorf("go list named %d packages", pkgs)
	}
}
