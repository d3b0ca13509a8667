package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/homatb/homatb/wire/dissector"
)

// newDissectorCmd is `homatb dissector`: the Wireshark dissector for
// homatb's packets, embedded in the binary (docs/dissector.md).
func newDissectorCmd() *cobra.Command {
	var (
		out     string
		install bool
	)
	cmd := &cobra.Command{
		Use:   "dissector [--out FILE | --install]",
		Short: "Write the Wireshark dissector for homatb's packets (IP protocol 146)",
		Long: `Writes homatb's Wireshark dissector, a Lua plugin for IPv4 protocol 146 in
homatb's wire format (Homa, START_MSG, pFabric's rank, NDP's PULL, NACK and
trimmed DATA), and prints its path as the last line, so that

  tshark -X lua_script:$(homatb dissector) -r RUN/captures/EXP/h1.pcapng

decodes a run's captures. Without --out the file goes to
~/.cache/homatb/homatb.lua.
--install copies it into your personal Wireshark plugin folder
(~/.local/lib/wireshark/plugins), where Wireshark and tshark load it at
start without -X. Fields are named homatb.*: see docs/dissector.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var path string
			switch {
			case install && out != "":
				return usagef("dissector: --install writes into the Wireshark plugin folder; give it or --out, not both")
			case install:
				p, err := dissector.Install()
				if err != nil {
					return err
				}
				path = p
			default:
				path = out
				if path == "" {
					path = dissector.DefaultPath()
				}
				if err := dissector.Write(path); err != nil {
					return err
				}
			}
			abs, err := filepath.Abs(path)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), abs)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "file to write the dissector to (default ~/.cache/homatb/homatb.lua)")
	fl.BoolVar(&install, "install", false, "copy the dissector into ~/.local/lib/wireshark/plugins")
	return cmd
}
