// Package config says where AMID keeps its data and finds its plugins, and is the one place
// that reads AMID's environment variables.
//
// A front end builds Settings from what the user chose (the desktop's Settings screen; the
// CLI has no saved settings), lets the environment take precedence with WithEnv, and passes
// the result by value to host.Open. Empty fields take their defaults when resolved to Paths:
//
//	AMID_HOME        the data folder (default: <os.UserConfigDir>/amid)
//	AMID_PLUGIN_DIR  the user's plugin folder (default: <data folder>/plugins)
//
// The built-in plugin folder is plugins next to the running executable (bin/plugins for
// bin/amid).
package config

import (
	"fmt"
	"os"
	"path/filepath"
)

// Environment variable names.
const (
	EnvHome      = "AMID_HOME"
	EnvPluginDir = "AMID_PLUGIN_DIR"
)

// Settings are the folders chosen for AMID; an empty field takes its default.
type Settings struct {
	Home           string // the data folder: the store, the runs
	PluginDir      string // the user's plugin folder
	BuiltinPlugins string // the built-in plugin folder (tests); default: plugins next to the executable
}

// FromEnv returns the settings the environment gives, the CLI's settings.
func FromEnv() Settings { return Settings{}.WithEnv() }

// WithEnv returns s with each folder the environment names ($AMID_HOME, $AMID_PLUGIN_DIR)
// in place of the one s has: the environment takes precedence over saved settings.
func (s Settings) WithEnv() Settings {
	if h := os.Getenv(EnvHome); h != "" {
		s.Home = h
	}
	if d := os.Getenv(EnvPluginDir); d != "" {
		s.PluginDir = d
	}
	return s
}

// EnvOverrides lists the environment variables set that take precedence over saved folders.
func EnvOverrides() []string {
	var out []string
	for _, e := range []string{EnvHome, EnvPluginDir} {
		if os.Getenv(e) != "" {
			out = append(out, e)
		}
	}
	return out
}

// Paths are settings resolved: absolute, with the defaults filled in.
type Paths struct {
	Home           string // the data folder
	Store          string // the bbolt store, amid.db in the data folder
	Runs           string // where the desktop program creates runs: runs in the data folder
	UserPlugins    string // the user's plugin folder
	BuiltinPlugins string // the built-in plugin folder
}

// Paths resolves the settings.
func (s Settings) Paths() (Paths, error) {
	var p Paths
	var err error
	if s.Home != "" {
		if p.Home, err = filepath.Abs(s.Home); err != nil {
			return Paths{}, fmt.Errorf("data folder %s: %w", s.Home, err)
		}
	} else {
		d, err := os.UserConfigDir()
		if err != nil {
			return Paths{}, fmt.Errorf("no data folder: set %s (%w)", EnvHome, err)
		}
		p.Home = filepath.Join(d, "amid")
	}
	p.Store = filepath.Join(p.Home, "amid.db")
	p.Runs = filepath.Join(p.Home, "runs")
	p.UserPlugins = filepath.Join(p.Home, "plugins")
	if s.PluginDir != "" {
		if p.UserPlugins, err = filepath.Abs(s.PluginDir); err != nil {
			return Paths{}, fmt.Errorf("plugin folder %s: %w", s.PluginDir, err)
		}
	}
	if s.BuiltinPlugins != "" {
		if p.BuiltinPlugins, err = filepath.Abs(s.BuiltinPlugins); err != nil {
			return Paths{}, fmt.Errorf("built-in plugin folder %s: %w", s.BuiltinPlugins, err)
		}
	} else if p.BuiltinPlugins, err = builtinPluginDir(); err != nil {
		return Paths{}, err
	}
	return p, nil
}

// builtinPluginDir is the folder of plugins shipped with AMID: plugins next to the running
// executable (bin/plugins for bin/amid).
func builtinPluginDir() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locate the amid executable: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return filepath.Join(filepath.Dir(exe), "plugins"), nil
}
