package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"amid/assets/ci"
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

// TestBuiltinTrust does what make build does, with the example plugin as the one built-in
// plugin: the plugin is built into bin/plugins, then a real amid is linked beside it with
// the flag .ci/builtin-sums.sh makes, and a plain amid without it. The built amid trusts
// the plugin as built and starts it; the plain one trusts nothing by itself; a copy in the
// user's folder is the user's to trust; a changed binary is refused with a sentence saying
// so, until the user trusts it.
func TestBuiltinTrust(t *testing.T) {
	if testing.Short() {
		t.Skip("links two amid programs")
	}
	for _, tool := range []string{"go", "bash", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			ci.Missing(t, tool+" is not on the PATH")
		}
	}
	root := t.TempDir()
	bin, home, user := filepath.Join(root, "bin"), filepath.Join(root, "home"), filepath.Join(root, "user")
	plugin := plugintest.Build(t, "../../plugins/examples/echo", "echo", filepath.Join(bin, "plugins"))
	flag, err := exec.Command("bash", "../../.ci/builtin-sums.sh", filepath.Join(bin, "plugins"), "echo", "segmentation").Output()
	if err != nil {
		t.Fatalf("builtin-sums.sh: %v", err)
	}
	link := func(out string, args ...string) string {
		cmd := exec.Command("go", append(append([]string{"build", "-o", out}, args...), "../cmd/amid")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, b)
		}
		return out
	}
	built := link(filepath.Join(bin, "amid"), "-ldflags="+strings.TrimSpace(string(flag)))
	plain := link(filepath.Join(bin, "amid-plain"))
	amid := func(exe string, args ...string) (string, string, error) {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), "AMID_HOME="+home, "AMID_PLUGIN_DIR="+user)
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		return o.String(), e.String(), err
	}
	list := func(exe string) pluginRow {
		t.Helper()
		out, errOut, err := amid(exe, "plugins", "list", "--json")
		var rows []pluginRow
		if err == nil {
			err = json.Unmarshal([]byte(out), &rows)
		}
		if err != nil || len(rows) != 1 {
			t.Fatalf("%s plugins list: %v, %d rows\n%s%s", filepath.Base(exe), err, len(rows), out, errOut)
		}
		return rows[0]
	}

	if r := list(built); !r.Trusted || r.TrustedBy != "build" || !r.Builtin {
		t.Errorf("the built amid lists %+v, want the built-in echo trusted by the build", r)
	}
	if out, errOut, err := amid(built, "plugins", "describe", "echo"); err != nil || !strings.HasPrefix(out, "echo 1.0.0") || !strings.Contains(out, "hardware:\n  cpu\n") || !strings.Contains(out, "(AMID_DEVICE=") {
		t.Errorf("the built amid describes echo: %v %q %q", err, out, errOut)
	}
	if r := list(plain); r.Trusted || r.State != "untrusted" {
		t.Errorf("a plain go build lists %+v, want echo untrusted", r)
	}
	if _, errOut, err := amid(plain, "plugins", "describe", "echo"); err == nil || !strings.Contains(errOut, "amid plugins trust echo") {
		t.Errorf("a plain build described echo: %v %q", err, errOut)
	}

	// The same binary in the user's folder shadows the built-in one and is not trusted.
	data, err := os.ReadFile(plugin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(user, "amid-plugin-echo"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	if r := list(built); r.Builtin || r.Trusted {
		t.Errorf("a copy in the user's folder: %+v, want the user's plugin, untrusted", r)
	}
	if err := os.Remove(filepath.Join(user, "amid-plugin-echo")); err != nil {
		t.Fatal(err)
	}

	// A changed built-in binary (a byte appended: it still runs) is refused, saying why.
	if err := os.WriteFile(plugin, append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := amid(built, "plugins", "describe", "echo")
	if err == nil || !strings.Contains(errOut, "built-in plugin echo") || !strings.Contains(errOut, "is not the binary this AMID was built with") {
		t.Errorf("a changed built-in plugin: %v %q", err, errOut)
	}
	if r := list(built); r.Trusted || r.State != "changed" {
		t.Errorf("a changed built-in plugin lists %+v", r)
	}
	if out, errOut, err := amid(built, "plugins", "trust", "echo"); err != nil || !strings.HasPrefix(out, "trusted echo") {
		t.Fatalf("trusting the changed plugin: %v %q %q", err, out, errOut)
	}
	if r := list(built); !r.Trusted || r.TrustedBy != "user" {
		t.Errorf("after the user trusted it: %+v", r)
	}
}
