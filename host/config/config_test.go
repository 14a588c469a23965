package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	t.Setenv(EnvDevice, "")
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

// The device setting: auto, cpu, vulkan or vulkan:N; the environment's takes precedence;
// a plugin process is always told it (auto when none is saved).
func TestDevice(t *testing.T) {
	for _, ok := range []string{"", "auto", "cpu", "vulkan", "vulkan:0", "vulkan:12"} {
		if err := CheckDevice(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"gpu", "vulkan:", "vulkan:-1", "vulkan:01", "vulkan:x", "CPU", "vulkan:1:2"} {
		if err := CheckDevice(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	t.Setenv(EnvDevice, "")
	if env, err := (Settings{}).DeviceEnv(); err != nil || !slices.Equal(env, []string{"AMID_DEVICE=auto"}) {
		t.Errorf("no setting: %q, %v", env, err)
	}
	s := Settings{Device: "cpu"}.WithEnv()
	if env, err := s.DeviceEnv(); err != nil || !slices.Equal(env, []string{"AMID_DEVICE=cpu"}) {
		t.Errorf("saved cpu: %q, %v", env, err)
	}
	t.Setenv(EnvDevice, "vulkan:1")
	if s := (Settings{Device: "cpu"}).WithEnv(); s.Device != "vulkan:1" || !slices.Contains(EnvOverrides(), EnvDevice) {
		t.Errorf("the environment's vulkan:1 over a saved cpu: %+v, overrides %v", s, EnvOverrides())
	}
	if _, err := (Settings{Device: "gpu"}).DeviceEnv(); err == nil || !strings.Contains(err.Error(), "AMID_DEVICE") {
		t.Errorf("a bad setting: %v", err)
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
