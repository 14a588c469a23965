package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestPaths(t *testing.T) {
	dir := t.TempDir()
	p, err := Settings{Home: dir}.Paths()
	if err != nil {
		t.Fatal(err)
	}
	if p.Home != dir || p.Store != filepath.Join(dir, "amid.db") || p.Runs != filepath.Join(dir, "runs") || p.UserPlugins != filepath.Join(dir, "plugins") {
		t.Errorf("Paths = %+v", p)
	}
	other := t.TempDir()
	if p, _ := (Settings{Home: dir, PluginDir: other, BuiltinPlugins: "rel"}).Paths(); p.UserPlugins != other || !filepath.IsAbs(p.BuiltinPlugins) {
		t.Errorf("with a plugin folder %s and a relative built-in folder: %+v", other, p)
	}
}

func TestDefaults(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	p, err := Settings{}.Paths()
	if err != nil {
		t.Fatal(err)
	}
	if p.Home != "/cfg/amid" {
		t.Errorf("Home = %s, want /cfg/amid (os.UserConfigDir honours XDG_CONFIG_HOME)", p.Home)
	}
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	if p.BuiltinPlugins != filepath.Join(filepath.Dir(exe), "plugins") {
		t.Errorf("BuiltinPlugins = %s", p.BuiltinPlugins)
	}
}

// The environment takes precedence over saved settings, field by field.
func TestWithEnv(t *testing.T) {
	t.Setenv(EnvHome, "/env/home")
	t.Setenv(EnvPluginDir, "")
	s := Settings{Home: "/saved/home", PluginDir: "/saved/plugins"}.WithEnv()
	if s.Home != "/env/home" || s.PluginDir != "/saved/plugins" {
		t.Errorf("WithEnv = %+v", s)
	}
	if got := EnvOverrides(); !slices.Equal(got, []string{EnvHome}) {
		t.Errorf("EnvOverrides = %v", got)
	}
	for _, e := range []string{EnvExecutor, EnvSlurmPartition, EnvSlurmAccount, EnvSlurmJobs, EnvSlurmCPUs, EnvSlurmGPUs} {
		t.Setenv(e, "")
	}
	if FromEnv() != (Settings{Home: "/env/home"}) {
		t.Errorf("FromEnv = %+v", FromEnv())
	}
}

// The executor's settings come from the environment field by field, over saved ones, and
// a kind that is none of the executors is refused in a sentence.
func TestExecutorFromEnv(t *testing.T) {
	t.Setenv(EnvExecutor, "slurm")
	t.Setenv(EnvSlurmPartition, "gpu")
	t.Setenv(EnvSlurmAccount, "")
	t.Setenv(EnvSlurmJobs, "8")
	t.Setenv(EnvSlurmCPUs, "")
	t.Setenv(EnvSlurmGPUs, "")
	s := Settings{Executor: Executor{Kind: "local", Account: "rad", CPUs: 2}}.WithEnv()
	if want := (Executor{Kind: "slurm", Partition: "gpu", Account: "rad", Jobs: 8, CPUs: 2}); s.Executor != want {
		t.Errorf("WithEnv: %+v, want %+v", s.Executor, want)
	}
	if !slices.Contains(EnvOverrides(), EnvSlurmJobs) {
		t.Errorf("EnvOverrides = %v", EnvOverrides())
	}
	if err := (Executor{Kind: "kubernetes"}).Validate(); err == nil {
		t.Error("an unknown executor was accepted")
	}
}
