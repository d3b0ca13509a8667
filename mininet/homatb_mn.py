"""homatb's Mininet side: topologies, the P4 switch nodes and link shaping.

Used two ways:

* by the testbed's runner (mininet/runner.py), which builds the network the
  Go orchestrator describes; and
* by hand, for a Mininet CLI with P4 switches:

    sudo /usr/bin/python3 /usr/bin/mn --custom mininet/homatb_mn.py \\
        --topo homatbstar,4 --switch homatb --controller none

  then program the switch with `homatb controller` (see docs/emulation.md).

Where the queues form: each host's NIC is shaped to the link rate by the
kernel (TCIntf, htb or tbf) on the host side only; the embedded switch's
side is not shaped by the kernel, the switch process shapes its own egress
ports, so queues build in the switch's eight priority queues. BMv2 shapes
each priority queue on its own, so its ports also get a kernel htb at the
link rate with strict priority (BMv2Switch). Offloads are turned off
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
    return wait_for(lambda: socket.create_connection(('127.0.0.1', port),
                                                     0.2), proc, timeout)


def wait_unix(path, proc, timeout=20.0):
    """Waits for a listener on the Unix socket path while proc is alive."""
    def connect():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(0.2)
            s.connect(path)
        except OSError:
            s.close()
            raise
        return s
    return wait_for(connect, proc, timeout)


def wait_for(connect, proc, timeout):
    """Retries connect() (which returns a socket) until it succeeds, proc
    ends or timeout seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            connect().close()
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
        try:
            self.proc = self.launch(cmd, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env)
        finally:
            log.close()
        if not self.wait_ready():
            error('*** %s did not start: see %s\n' % (self.name,
                                                      self.log_file))
            raise RuntimeError('switch %s did not start (exit %s); see %s' %
                               (self.name, self.proc.poll(), self.log_file))

    def launch(self, cmd, **kw):
        """Starts the switch process (in the root namespace)."""
        return subprocess.Popen(cmd, **kw)

    def wait_ready(self):
        return wait_listening(self.grpc_port, self.proc)

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
    second by the controller side, as BMv2 takes no bit rate.

    The switch runs in a network namespace of its own, holding only its
    ports (no address) and a loopback: its Thrift server binds every
    address and cannot be told otherwise, so the namespace is what keeps
    Thrift off this machine's addresses. P4Runtime is served on a Unix
    socket (grpc_socket), which the controller reaches from the root
    namespace; simple_switch_CLI enters the namespace to reach Thrift.

    BMv2 rate-limits each priority queue of a port on its own, so a port
    whose traffic spans several priorities could send several times its
    link rate. port_shaper caps each port at the link rate with a kernel
    htb on the switch-side interface, eight strict-priority classes
    classified by DSCP exactly as tor.p4's dscp_to_queue table: what BMv2
    sends beyond the link rate waits there in priority order instead of
    leaving the port.
    """

    def __init__(self, name, json_path='build/tor.json', thrift_port=9090,
                 grpc_socket=None, notifications=None, port_shaper=None,
                 **params):
        params['inNamespace'] = True
        HomatbSwitch.__init__(self, name, **params)
        self.json_path = json_path
        self.thrift_port = int(thrift_port)
        self.grpc_socket = grpc_socket or '/tmp/homatb-%s-p4rt.sock' % name
        self.notifications = notifications
        self.port_shaper = port_shaper

    def command(self):
        # Options after "--" belong to the simple_switch_grpc target,
        # --priority-queues among them.
        cmd = ['simple_switch_grpc'] + self.ports_args() + [
            '--device-id', str(self.device_id),
            '--thrift-port', str(self.thrift_port)]
        if self.notifications:
            cmd += ['--notifications-addr', 'ipc://' + self.notifications]
        if self.pcap_dir:
            cmd += ['--pcap', self.pcap_dir]
        cmd += [self.json_path, '--', '--grpc-server-addr',
                'unix:' + self.grpc_socket, '--priority-queues', '8']
        return cmd

    def start(self, controllers):
        # Thrift listens here; simple_switch_CLI reaches it over this lo.
        self.check(['ip', 'link', 'set', 'dev', 'lo', 'up'])
        for intf in self.intfList():
            if intf.name != 'lo' and self.port_shaper:
                for args in shaper_commands(intf.name, self.port_shaper):
                    self.check(args)
        if os.path.exists(self.grpc_socket):
            os.unlink(self.grpc_socket)
        HomatbSwitch.start(self, controllers)

    def check(self, args):
        """Runs a command in the switch's namespace; fails on an error."""
        p = self.popen(args, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        out, _ = p.communicate(timeout=10)
        if p.returncode != 0:
            raise RuntimeError('%s: %s: %s' % (self.name, ' '.join(args),
                                               out.decode('utf-8', 'replace')))

    def launch(self, cmd, **kw):
        # In the switch's namespace (mnexec -da), not the root one.
        return self.popen(cmd, **kw)

    def wait_ready(self):
        return wait_unix(self.grpc_socket, self.proc)


def shaper_commands(intf, shaper):
    """The tc commands capping intf at shaper['rate_bps'] with strict
    priority between tor.p4's eight queues: an htb class at the link rate
    with eight children, queue q being class 1:1q with htb priority 7-q, so
    that the highest queue with a packet sends first. Each child is
    guaranteed only a thousandth of the link (htb needs a rate) and
    borrows the rest in priority order; each holds a packet FIFO of
    shaper['limit_pkts']. DSCPs the map does not name, and non-IP frames,
    go to queue 0 as in tor.p4. (This kernel has htb and tbf but not prio.)
    """
    rate = int(shaper['rate_bps'])
    frame = int(shaper.get('mtu') or 1500) + 14
    limit = int(shaper.get('limit_pkts') or 64)
    # Two frames of burst: the port may not run ahead of its rate by more.
    burst = str(2 * frame)
    cmds = [['tc', 'qdisc', 'replace', 'dev', intf, 'root', 'handle', '1:',
             'htb', 'default', '10'],
            ['tc', 'class', 'add', 'dev', intf, 'parent', '1:', 'classid',
             '1:1', 'htb', 'rate', '%dbit' % rate, 'ceil', '%dbit' % rate,
             'burst', burst, 'cburst', burst, 'quantum', str(frame)]]
    for q in range(8):
        cmds.append(['tc', 'class', 'add', 'dev', intf, 'parent', '1:1',
                     'classid', '1:1%d' % q, 'htb',
                     'rate', '%dbit' % max(rate // 1000, 8),
                     'ceil', '%dbit' % rate, 'burst', burst,
                     'cburst', burst, 'prio', str(7 - q),
                     'quantum', str(frame)])
        cmds.append(['tc', 'qdisc', 'add', 'dev', intf, 'parent',
                     '1:1%d' % q, 'handle', '2%d:' % q, 'pfifo',
                     'limit', str(limit)])
    for dscp, queue in sorted((int(d), int(q)) for d, q in
                              (shaper.get('dscp_queue') or {}).items()):
        cmds.append(['tc', 'filter', 'add', 'dev', intf, 'parent', '1:',
                     'protocol', 'ip', 'prio', '1', 'u32', 'match', 'ip',
                     'dsfield', '0x%02x' % (dscp << 2), '0xfc',
                     'flowid', '1:1%d' % queue])
    return cmds


topos = {'homatbstar': StarTopo, 'homatbleafspine': LeafSpineTopo}
switches = {'homatb': HomatbSwitch, 'bmv2': BMv2Switch}
