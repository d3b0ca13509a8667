"""homatb's Mininet side: topologies, the P4 switch nodes and link shaping.

Used two ways:

* by the testbed's runner (mininet/runner.py), which builds the network the
  Go orchestrator describes; and
* by hand, for a Mininet CLI with P4 switches:

    sudo /usr/bin/python3 /usr/bin/mn --custom mininet/homatb_mn.py \\
        --topo homatbstar,4 --switch homatb --controller none

  then program the switch with `homatb controller` (see docs/emulation.md).

Where the queues form: each host's NIC is shaped to the link rate by the
kernel (TCIntf, htb or tbf) on the host side only; the switch side is not
shaped by the kernel, the switch process shapes its own egress ports, so
queues build in the switch's eight priority queues. Offloads are turned off
on every veth so that every frame is one packet.
"""

import os
import socket
import subprocess
import time

from mininet.link import Intf, Link, TCIntf
from mininet.log import error, info
from mininet.node import Switch
from mininet.topo import Topo

OFFLOADS = ('rx', 'tx', 'sg', 'tso', 'gso', 'gro', 'lro')


def host_mac(index):
    """Deterministic MAC of host h<index> (1-based)."""
    return '02:00:00:00:%02x:%02x' % (index >> 8, index & 0xff)


def host_ip(index, leaf=0):
    """Host addresses: 10.0.<leaf>.<n>, all in one /16 (on-link, static ARP)."""
    return '10.0.%d.%d' % (leaf, index)


def disable_offloads(node, intf):
    """Turns off every offload on intf, one feature at a time: ethtool
    refuses a whole -K command when one feature cannot change."""
    for feature in OFFLOADS:
        node.cmd('ethtool -K %s %s off 2>/dev/null' % (intf, feature))


def host_link_opts(bw_mbit, shaper='htb'):
    """Link options shaping only the host's side of a host-switch link."""
    params = {'bw': bw_mbit} if bw_mbit else {}
    if bw_mbit and shaper == 'tbf':
        params['use_tbf'] = True
    return {'cls': Link, 'cls1': TCIntf, 'cls2': Intf,
            'params1': params, 'params2': {}}


class StarTopo(Topo):
    """One ToR switch s1 and n hosts h1..hn on ports 1..n."""

    def build(self, n=4, bw=100, shaper='htb'):
        self.addSwitch('s1', device_id=1)
        for i in range(1, int(n) + 1):
            self.addHost('h%d' % i, ip=host_ip(i) + '/16', mac=host_mac(i))
            opts = host_link_opts(float(bw), shaper)
            self.addLink('h%d' % i, 's1', port1=0, port2=i, **opts)


class LeafSpineTopo(Topo):
    """leaves ToRs l1.. with hosts ports 1..hosts, spines p1.. on the ports
    after them; spine port l goes to leaf l."""

    def build(self, leaves=2, spines=1, hosts=2, bw=100, shaper='htb'):
        leaves, spines, hosts = int(leaves), int(spines), int(hosts)
        for s in range(1, spines + 1):
            self.addSwitch('p%d' % s, device_id=100 + s)
        for l in range(1, leaves + 1):
            self.addSwitch('l%d' % l, device_id=l)
            for j in range(1, hosts + 1):
                idx = (l - 1) * hosts + j
                self.addHost('h%d' % idx, ip=host_ip(j, l) + '/16',
                             mac=host_mac(idx))
                opts = host_link_opts(float(bw), shaper)
                self.addLink('h%d' % idx, 'l%d' % l, port1=0, port2=j,
                             **opts)
            for s in range(1, spines + 1):
                self.addLink('l%d' % l, 'p%d' % s, port1=hosts + s, port2=l)


def wait_listening(port, proc, timeout=10.0):
    """Waits for a TCP listener on 127.0.0.1:port while proc is alive."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(('127.0.0.1', port), 0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


class HomatbSwitch(Switch):
    """A P4 switch running the embedded target, `homatb switch`, in the root
    namespace (like Mininet's own switches), serving P4Runtime on
    127.0.0.1:grpc_port."""

    next_grpc_port = 9559

    def __init__(self, name, binary='homatb', device_id=None, grpc_port=None,
                 link_bps=100000000, queue_depth_pkts=512, stats_file=None,
                 log_file=None, pcap_dir=None, admin_socket=None, env=None,
                 extra_args=None, **params):
        params.setdefault('inNamespace', False)
        Switch.__init__(self, name, dpid=params.pop('dpid', None) or '1',
                        **params)
        self.binary = binary
        self.device_id = int(device_id or 1)
        if grpc_port is None:
            grpc_port = HomatbSwitch.next_grpc_port
            HomatbSwitch.next_grpc_port += 1
        self.grpc_port = int(grpc_port)
        self.link_bps = int(link_bps)
        self.queue_depth_pkts = int(queue_depth_pkts)
        self.stats_file = stats_file
        self.log_file = log_file or '/tmp/homatb-%s.log' % name
        self.pcap_dir = pcap_dir
        self.admin_socket = admin_socket
        self.env = env
        self.extra_args = list(extra_args or [])
        self.proc = None

    def ports_args(self):
        args = []
        for port, intf in sorted(self.intfs.items()):
            if port > 0 and intf.name != 'lo':
                args += ['-i', '%d@%s' % (port, intf.name)]
        return args

    def command(self):
        cmd = [self.binary, 'switch'] + self.ports_args() + [
            '--device-id', str(self.device_id),
            '--grpc-server-addr', '127.0.0.1:%d' % self.grpc_port,
            '--link-rate', str(self.link_bps),
            '--queue-depth-pkts', str(self.queue_depth_pkts)]
        if self.stats_file:
            cmd += ['--stats-file', self.stats_file]
        if self.admin_socket:
            cmd += ['--admin-socket', self.admin_socket]
        if self.pcap_dir:
            cmd += ['--pcap', self.pcap_dir]
        return cmd + self.extra_args

    def start(self, controllers):
        for intf in self.intfList():
            if intf.name != 'lo':
                disable_offloads(self, intf.name)
                self.cmd('sysctl -qw net.ipv6.conf.%s.disable_ipv6=1' %
                         intf.name)
        cmd = self.command()
        info('*** %s: %s\n' % (self.name, ' '.join(cmd)))
        log = open(self.log_file, 'ab')
        env = dict(os.environ)
        env.update(self.env or {})
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env)
        log.close()
        if not wait_listening(self.grpc_port, self.proc):
            error('*** %s did not start: see %s\n' % (self.name,
                                                      self.log_file))
            raise RuntimeError('switch %s did not start (exit %s); see %s' %
                               (self.name, self.proc.poll(), self.log_file))

    def stop(self, deleteIntfs=True):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        Switch.stop(self, deleteIntfs)


class BMv2Switch(HomatbSwitch):
    """simple_switch_grpc with eight priority queues, for machines that have
    BMv2 (not packaged for Debian 12). Queue rates are set in packets per
    second by the controller side, as BMv2 takes no bit rate."""

    def __init__(self, name, json_path='build/tor.json', thrift_port=9090,
                 **params):
        HomatbSwitch.__init__(self, name, **params)
        self.json_path = json_path
        self.thrift_port = int(thrift_port)

    def command(self):
        # Options after "--" belong to the simple_switch_grpc target,
        # --priority-queues among them.
        cmd = ['simple_switch_grpc'] + self.ports_args() + [
            '--device-id', str(self.device_id),
            '--thrift-port', str(self.thrift_port)]
        if self.pcap_dir:
            cmd += ['--pcap', self.pcap_dir]
        cmd += [self.json_path, '--', '--grpc-server-addr',
                '127.0.0.1:%d' % self.grpc_port, '--priority-queues', '8']
        return cmd


topos = {'homatbstar': StarTopo, 'homatbleafspine': LeafSpineTopo}
switches = {'homatb': HomatbSwitch, 'bmv2': BMv2Switch}
