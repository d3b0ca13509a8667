package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homatb/homatb/internal/units"
	"github.com/homatb/homatb/workloads"
)

// newCMCmd is `homatb cm`: a connection matrix in htsim's format, for a
// scenario's connection_matrix phase (docs/scenarios.md, "Connection
// matrices").
func newCMCmd() *cobra.Command {
	var (
		nodes         int
		size, release string
		out           string
		pod           int
		seed          uint64
	)
	cmd := &cobra.Command{
		Use:   "cm ring-allreduce|incast|permutation --nodes N --bytes SIZE [--release SIZE] [--pod N --seed N] [--out FILE]",
		Short: "Write a connection matrix in htsim's format (.cm)",
		Long: `Writes a connection matrix in htsim's format to standard output (or --out),
with triggers laid out as htsim's own generators lay them out, for a
scenario phase's connection_matrix.

  ring-allreduce  N chains of 2(N-1) flows of bytes/N around the ring, each
                  flow after the one before it in its chain has every byte
                  acknowledged (send_done_trigger, oneshot triggers)
  incast          nodes 1..N-1 each send bytes/N to node 0 at once; with
                  --release, node 0 then sends each a flow of that size once
                  all have arrived (recv_done_trigger, a barrier)
  permutation     every node sends one flow of bytes to one node, and
                  receives one, all at 0; with --pod, nodes are in pods of
                  that many consecutive nodes and no flow stays in its pod
                  (a fat tree's pods: k²/4 hosts); --seed picks it

--bytes is the collective's buffer, as a collective phase's bytes; for
permutation it is each flow's size.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(workloads.MatrixGenerators, args[0]) {
				return usagef("cm: unknown kind %q: expected one of %s", args[0], strings.Join(workloads.MatrixGenerators, ", "))
			}
			b, err := units.ParseSize(size)
			if err != nil {
				return usagef("cm: --bytes %q: %v", size, err)
			}
			var r int64
			if release != "" {
				if r, err = units.ParseSize(release); err != nil {
					return usagef("cm: --release %q: %v", release, err)
				}
				if args[0] != workloads.GenIncast {
					return usagef("cm: --release is for incast")
				}
			}
			if args[0] != workloads.GenPermutation && (pod != 0 || seed != 0) {
				return usagef("cm: --pod and --seed are for permutation")
			}
			var text []byte
			if args[0] == workloads.GenPermutation {
				text, err = workloads.Permutation{Nodes: nodes, PodSize: pod, Bytes: b, Seed: seed}.Generate()
			} else {
				text, err = workloads.GenerateMatrix(args[0], nodes, b, r)
			}
			if err != nil {
				return usagef("cm: %v", err)
			}
			if out != "" {
				if err := os.WriteFile(out, text, 0o644); err != nil {
					return fmt.Errorf("cm: %w", err)
				}
				return nil
			}
			_, err = cmd.OutOrStdout().Write(text)
			return err
		},
	}
	cmd.Flags().IntVar(&nodes, "nodes", 8, "nodes in the matrix (mapped to the phase's hosts in order)")
	cmd.Flags().StringVar(&size, "bytes", "1MB", "the collective's buffer; each flow carries bytes/nodes")
	cmd.Flags().StringVar(&release, "release", "", "incast: the size of node 0's release flows (none without)")
	cmd.Flags().IntVar(&pod, "pod", 0, "permutation: nodes per pod; no flow stays in its pod (0: only none to itself)")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "permutation: picks the permutation")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the matrix to this file instead of standard output")
	return cmd
}
