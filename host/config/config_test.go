package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHomeOverride(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvHome, dir)
	t.Setenv(EnvPluginDir, "")
	if h, _ := Home(); h != dir {
		t.Errorf("Home = %s, want %s", h, dir)
	}
	if p, _ := StorePath(); p != filepath.Join(dir, "amid.db") {
		t.Errorf("StorePath = %s", p)
	}
	if p, _ := PluginDir(); p != filepath.Join(dir, "plugins") {
		t.Errorf("PluginDir = %s", p)
	}
	other := t.TempDir()
	t.Setenv(EnvPluginDir, other)
	if p, _ := PluginDir(); p != other {
		t.Errorf("PluginDir with %s = %s, want %s", EnvPluginDir, p, other)
	}
}

func TestDefaults(t *testing.T) {
	t.Setenv(EnvHome, "")
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	if h, _ := Home(); h != "/cfg/amid" {
		t.Errorf("Home = %s, want /cfg/amid (os.UserConfigDir honours XDG_CONFIG_HOME)", h)
	}
	b, err := BuiltinPluginDir()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	if b != filepath.Join(filepath.Dir(exe), "plugins") {
		t.Errorf("BuiltinPluginDir = %s", b)
	}
}
