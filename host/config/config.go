// Package config is the one place where AMID reads its environment: where its data folder,
// store and plugin folders are. Each setting has a typed accessor; nothing else in the
// program reads these environment variables.
//
//	AMID_HOME        the data folder (default: <os.UserConfigDir>/amid)
//	AMID_PLUGIN_DIR  the user's plugin folder (default: <data folder>/plugins)
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

// Home is the data folder: $AMID_HOME, or amid under the user's configuration folder.
func Home() (string, error) {
	if h := os.Getenv(EnvHome); h != "" {
		return filepath.Abs(h)
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no data folder: set %s (%w)", EnvHome, err)
	}
	return filepath.Join(d, "amid"), nil
}

// StorePath is the host's bbolt store, amid.db in the data folder.
func StorePath() (string, error) {
	h, err := Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, "amid.db"), nil
}

// WorkDir is where training lanes write checkpoints and predictions: work in the data folder.
func WorkDir() (string, error) {
	h, err := Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, "work"), nil
}

// PluginDir is the user's plugin folder: $AMID_PLUGIN_DIR, or plugins in the data folder.
func PluginDir() (string, error) {
	if d := os.Getenv(EnvPluginDir); d != "" {
		return filepath.Abs(d)
	}
	h, err := Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, "plugins"), nil
}

// BuiltinPluginDir is the folder of plugins shipped with AMID: plugins next to the running
// executable (bin/plugins for bin/amid).
func BuiltinPluginDir() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locate the amid executable: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return filepath.Join(filepath.Dir(exe), "plugins"), nil
}

// PluginDirs lists the folders searched for plugins, built-in first.
func PluginDirs() ([]string, error) {
	b, err := BuiltinPluginDir()
	if err != nil {
		return nil, err
	}
	u, err := PluginDir()
	if err != nil {
		return nil, err
	}
	return []string{b, u}, nil
}
