// Package dissector holds homatb's Wireshark dissector (homatb.lua, a Lua
// plugin for IPv4 protocol 146 in the layout of package wire) and writes
// or installs it. docs/dissector.md describes its fields.
package dissector

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
)

// Lua is the dissector's source.
//
//go:embed homatb.lua
var Lua []byte

// FileName is the name the dissector is written under.
const FileName = "homatb.lua"

// Write writes the dissector to path, creating its directory.
func Write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("dissector: %w", err)
	}
	if err := os.WriteFile(path, Lua, 0o644); err != nil {
		return fmt.Errorf("dissector: %w", err)
	}
	return nil
}

// DefaultPath is where `homatb dissector` writes without --out: the user's
// cache directory (~/.cache/homatb/homatb.lua), else the temporary one.
func DefaultPath() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "homatb", FileName)
}

// PluginDir is the user's personal Wireshark Lua plugin folder, which
// Wireshark and tshark load at start: $XDG_CONFIG_HOME is not consulted,
// Wireshark on Linux reads ~/.local/lib/wireshark/plugins.
func PluginDir() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("dissector: no home directory for the Wireshark plugin folder: %w", err)
	}
	return filepath.Join(home, ".local", "lib", "wireshark", "plugins"), nil
}

// Install copies the dissector into PluginDir and returns the file's path.
func Install() (string, error) {
	dir, err := PluginDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, FileName)
	return path, Write(path)
}
