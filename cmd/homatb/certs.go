package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatb/homatb/internal/runcerts"
)

// newCertsCmd is `homatb certs`: the credentials of one multi-machine run
// (docs/multi-machine.md).
func newCertsCmd() *cobra.Command {
	var (
		parent   string
		exact    string
		hosts    []string
		validity time.Duration
	)
	cmd := &cobra.Command{
		Use:   "certs --run-dir DIR --hosts ADDR[,ADDR...]",
		Short: "Make a run's credentials for agents listening on a network (mutual TLS)",
		Long: `Writes a new certificate authority (its key is not kept), one certificate
that every agent presents, valid for the given addresses and names (loopback
is always included), and the orchestrator's client certificate:

  ca.pem  agent.pem agent-key.pem  client.pem client-key.pem

Copy ca.pem, agent.pem and agent-key.pem to each host and start
  homatb agent --listen ADDR --tls-cert agent.pem --tls-key agent-key.pem --tls-ca ca.pem
and name DIR in the scenario's topology.external.certs. An agent then
answers only a client holding client.pem, and the orchestrator only agents
holding agent.pem.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := outDir(parent, exact, "certs")
			if err != nil {
				return err
			}
			if out == "" {
				return usagef("certs: --run-dir DIR (or --out PARENT, for PARENT/certs) is required")
			}
			if len(hosts) == 0 {
				return fmt.Errorf("certs: --hosts is required: the agents' control addresses or names")
			}
			if err := runcerts.Generate(out, runcerts.Options{Hosts: hosts, Validity: validity}); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "credentials in %s, valid for %s\n", out, validity)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&parent, "out", "", "parent directory: the credentials go into PARENT/certs")
	fl.StringVar(&exact, "run-dir", "", "exact directory to write the credentials into")
	fl.StringSliceVar(&hosts, "hosts", nil, "agents' control addresses or DNS names (comma-separated or repeated)")
	fl.DurationVar(&validity, "valid", runcerts.DefaultValidity, "how long the certificates are valid")
	return cmd
}
