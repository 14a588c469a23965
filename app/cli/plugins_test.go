package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/store"
	"amid/plugins/plugintest"
)

// TestPluginsCommands drops the example plugin into a plugin folder and lists, trusts and
// describes it through the CLI.
func TestPluginsCommands(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "my-plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AMID_HOME", home)
	t.Setenv("AMID_PLUGIN_DIR", dir)
	plugintest.Build(t, "../../plugins/examples/echo", "echo", dir)

	list := func() []pluginRow {
		out, errOut, code := run(t, "plugins", "list", "--json")
		if code != 0 {
			t.Fatalf("plugins list: %d %s", code, errOut)
		}
		var rows []pluginRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("plugins list --json: %v\n%s", err, out)
		}
		return rows
	}
	rows := list()
	if len(rows) != 1 || rows[0].Name != "echo" || rows[0].Trusted || len(rows[0].SHA256) != 64 {
		t.Fatalf("before trust: %+v", rows)
	}
	if _, errOut, code := run(t, "plugins", "describe", "echo", "--json"); code == 0 || !strings.Contains(errOut, "amid plugins trust echo") {
		t.Errorf("describe of an untrusted plugin: %d %q", code, errOut)
	}
	if out, errOut, code := run(t, "plugins", "trust", "echo"); code != 0 || !strings.HasPrefix(out, "trusted echo 1.0.0") {
		t.Fatalf("trust: %d %q %q", code, out, errOut)
	}
	rows = list()
	if !rows[0].Trusted || rows[0].Version != "1.0.0" || strings.Join(rows[0].Kinds, " ") != "segmentation-2d segmentation-3d" {
		t.Errorf("after trust: %+v", rows)
	}
	out, errOut, code := run(t, "plugins", "describe", "echo", "--json")
	if code != 0 {
		t.Fatalf("describe: %d %s", code, errOut)
	}
	var d describeOut
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.Name != "echo" || d.ProtocolVersion != 1 || d.SHA256 != rows[0].SHA256 || !json.Valid(d.ConfigSchema) {
		t.Errorf("describe = %+v", d)
	}
	if _, errOut, code := run(t, "plugins", "trust", "nope"); code == 0 || !strings.Contains(errOut, "no such plugin: nope") {
		t.Errorf("trust nope: %d %q", code, errOut)
	}

	// While another AMID holds the store, commands that need it say so and exit.
	st, err := store.Open(filepath.Join(home, "amid.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, errOut, code := run(t, "plugins", "list"); code != 1 || !strings.Contains(errOut, "amid: AMID is already running (store locked)") {
		t.Errorf("list with the store held: %d %q", code, errOut)
	}
}
