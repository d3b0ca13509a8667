package main

import "path/filepath"

// outDir resolves where a command writes: --run-dir exactly, else a
// directory called name under --out, a parent directory as for run. "" when
// neither flag is set: the command's own default applies.
func outDir(parent, exact, name string) (string, error) {
	switch {
	case exact != "" && parent != "":
		return "", usagef("--out (a parent directory) and --run-dir (the exact directory) exclude each other")
	case exact != "":
		return exact, nil
	case parent != "":
		return filepath.Join(parent, name), nil
	}
	return "", nil
}
