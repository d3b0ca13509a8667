// Package slurmtest starts a real one-node Slurm cluster for tests: Debian's
// munged, slurmctld and slurmd, with a generated slurm.conf, a munge key and
// every state file in a temporary directory, stopped when the test ends.
package slurmtest

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Cluster is a running one-node cluster.
type Cluster struct {
	// Dir holds its configuration, state and logs.
	Dir string
	// Conf is its slurm.conf.
	Conf string
	// Env is what a Slurm command needs in its environment to reach it.
	Env []string
	// CPUs is the node's CPU count as slurm.conf declares it.
	CPUs int
}

// Start starts a cluster, or skips the test with the reason it cannot.
func Start(t testing.TB) *Cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a Slurm cluster needs root (slurmd runs jobs as their user)")
	}
	for _, b := range []string{"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s not on PATH: install Debian's munge, slurmctld, slurmd and slurm-client (scripts/install-deps.sh does)", b)
		}
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatalf("hostname: %v", err)
	}
	// The short name: slurmd matches NodeName against it.
	host, _, _ = strings.Cut(host, ".")
	dir, err := os.MkdirTemp("", "homatb-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{"state", "spool", "log"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 1024)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(dir, "munge.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), CPUs: 2}
	c.Env = []string{"SLURM_CONF=" + c.Conf}
	if err := os.WriteFile(c.Conf, []byte(conf(dir, host, ports, c.CPUs)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Foreground daemons, children of the test: killed with it.
	c.daemon(t, "munged", "-F", "-f", "--socket="+filepath.Join(dir, "munge.sock"),
		"--key-file="+filepath.Join(dir, "munge.key"), "--log-file="+filepath.Join(dir, "log", "munged.log"),
		"--pid-file="+filepath.Join(dir, "munged.pid"), "--seed-file="+filepath.Join(dir, "munged.seed"))
	if err := waitFor(10*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "munge.sock")); return err == nil }); err != nil {
		t.Fatalf("munged did not create its socket: %v; log: %s", err, c.Log("munged.log"))
	}
	c.daemon(t, "slurmctld", "-D", "-c", "-i")
	c.daemon(t, "slurmd", "-D")
	if err := waitFor(30*time.Second, func() bool {
		out, err := c.Command(context.Background(), "sinfo", "-h", "-o", "%T").Output()
		return err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "idle")
	}); err != nil {
		t.Fatalf("the node did not become idle: %v\nslurmctld: %s\nslurmd: %s", err, c.Log("slurmctld.log"), c.Log("slurmd.log"))
	}
	return c
}

// Command is a Slurm command aimed at the cluster.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(cmd.Environ(), c.Env...)
	return cmd
}

// Log returns the tail of one of the cluster's logs, for failure messages.
func (c *Cluster) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "log", name))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (c *Cluster) daemon(t testing.TB, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), c.Env...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
}

func conf(dir, host string, ports []int, cpus int) string {
	p := func(name string) string { return filepath.Join(dir, name) }
	lines := []string{
		"ClusterName=homatbtest",
		"SlurmctldHost=" + host,
		fmt.Sprintf("SlurmctldPort=%d", ports[0]),
		fmt.Sprintf("SlurmdPort=%d", ports[1]),
		"AuthType=auth/munge",
		"CredType=cred/munge",
		"AuthInfo=socket=" + p("munge.sock"),
		"SlurmUser=root",
		"SlurmdUser=root",
		"StateSaveLocation=" + p("state"),
		"SlurmdSpoolDir=" + p("spool"),
		"SlurmctldPidFile=" + p("slurmctld.pid"),
		"SlurmdPidFile=" + p("slurmd.pid"),
		"SlurmctldLogFile=" + p("log/slurmctld.log"),
		"SlurmdLogFile=" + p("log/slurmd.log"),
		// No cgroups: processes are tracked by their parent chain.
		"ProctrackType=proctrack/linuxproc",
		"TaskPlugin=task/none",
		"SelectType=select/cons_tres",
		"SelectTypeParameters=CR_CPU",
		"MpiDefault=none",
		"ReturnToService=2",
		// Ended jobs stay visible to scontrol for the test's length.
		"MinJobAge=3600",
		"JobCompType=jobcomp/none",
		"JobAcctGatherType=jobacct_gather/none",
		"AccountingStorageType=accounting_storage/none",
		fmt.Sprintf("NodeName=%s CPUs=%d State=UNKNOWN", host, cpus),
		fmt.Sprintf("PartitionName=homatb Nodes=%s Default=YES MaxTime=INFINITE State=UP", host),
	}
	return strings.Join(lines, "\n") + "\n"
}

// freePorts finds n TCP ports free now, below the kernel's ephemeral range
// so that no outgoing connection takes one before the daemons bind it,
// from a random start so that clusters of tests running at once (go test
// runs packages in parallel) do not pick the same ones.
func freePorts(n int) ([]int, error) {
	var ports []int
	for p := 20000 + mrand.IntN(11000); p < 32000 && len(ports) < n; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", p))
		if err != nil {
			continue
		}
		l.Close()
		ports = append(ports, p)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("no %d free ports in 20000-31999", n)
	}
	return ports, nil
}

func waitFor(d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}
