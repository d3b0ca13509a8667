#!/usr/bin/python3
"""The runner the Go orchestrator drives: it builds a Mininet network and runs
commands in its hosts, speaking one JSON object per line.

Requests arrive on stdin, replies and events leave on stdout; Mininet's own
log goes to stderr. Every request carries an "id" and an "op"; its reply has
the same "id", "ok" (true or false) and, when false, "error".

  {"id":1,"op":"build","spec":{...}}       build hosts, links, shaping, start switches
      reply data: {"hosts":{"h1":{"pid":N}}, "switches":{"s1":{"pid":N}}}
  {"id":2,"op":"cmd","host":"h1","args":[...],"timeout":5}
      run a command in a host and wait; reply: {"rc":0,"output":"..."}
  {"id":3,"op":"popen","name":"agent-h1","host":"h1","args":[...],"log":"/path","env":{}}
      start a process in a host (host "" = root namespace); reply: {"pid":N}
  {"id":4,"op":"signal","name":"agent-h1","sig":15}
  {"id":5,"op":"stop"}                     stop every process and the network, then exit

Events, unprompted, carry "event" instead of "id":

  {"event":"ready"}                         the runner has imported Mininet
  {"event":"exit","name":"agent-h1","pid":N,"rc":1}   a started process ended

End of input is the same as "stop": if the orchestrator dies, the network
goes with it. SIGINT is ignored (the orchestrator decides when to stop);
SIGTERM stops as "stop" does.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mininet.link import Intf, Link, TCIntf  # noqa: E402
from mininet.log import setLogLevel  # noqa: E402
from mininet.net import Mininet  # noqa: E402

from homatb_mn import BMv2Switch, HomatbSwitch, disable_offloads  # noqa: E402

STOP_GRACE_S = 2.0


def tbf_latency_ms(bw_mbit, mtu):
    """The latency that gives a host link's tbf (Mininet's TCIntf sets
    limit = rate * latency + its 15,000-byte burst) a queue of 1,000 full
    frames, as htb's leaf has (the interface's txqueuelen): the kernel's
    traffic waits there, rather than being dropped, while the host obeys a
    PAUSE (hostagent/linkpause)."""
    return (1000 * (mtu + 14) - 15000) * 8.0 / (bw_mbit * 1e6) * 1e3


class Runner:
    def __init__(self, out):
        self.out = out
        self.lock = threading.Lock()
        self.net = None
        self.hosts = {}      # logical name -> Mininet node
        self.switches = {}   # logical name -> HomatbSwitch
        self.procs = {}      # name -> Popen
        self.reported = set()
        self.stopping = False

    def send(self, obj):
        line = json.dumps(obj, separators=(',', ':'))
        with self.lock:
            self.out.write(line + '\n')
            self.out.flush()

    # --- requests -------------------------------------------------------

    def op_build(self, req):
        spec = req['spec']
        net = Mininet(topo=None, build=False, controller=None,
                      autoSetMacs=False, cleanup=False, waitConnected=False)
        self.net = net
        for h in spec.get('hosts') or []:
            self.hosts[h['name']] = net.addHost(h['node'], ip=h['ip'],
                                                mac=h['mac'])
        env = dict(spec.get('env') or {})
        for s in spec.get('switches') or []:
            extra = {}
            cls = HomatbSwitch
            if s.get('kind') == 'bmv2':
                cls = BMv2Switch
                extra = dict(json_path=s['bmv2_json'],
                             thrift_port=s['thrift_port'],
                             grpc_socket=s.get('grpc_socket'),
                             notifications=s.get('notifications'),
                             port_shaper=s.get('port_shaper'))
            self.switches[s['name']] = net.addSwitch(
                s['node'], cls=cls, binary=s['binary'],
                device_id=s['device_id'], grpc_port=s['grpc_port'],
                link_bps=s['link_bps'],
                queue_depth_pkts=s['queue_depth_pkts'],
                stats_file=s.get('stats_file'), log_file=s.get('log_file'),
                pcap_dir=s.get('pcap_dir'),
                admin_socket=s.get('admin_socket'), env=env,
                extra_args=s.get('extra_args'), **extra)
        bw = spec.get('bw_mbit') or 0
        shaper = spec.get('shaper', 'htb')
        for l in spec.get('links') or []:
            a, b = self.node(l['a']), self.node(l['b'])
            params1 = {}
            if l.get('shape_a') and bw:
                params1 = {'bw': bw}
                if shaper == 'tbf':
                    params1['use_tbf'] = True
                    params1['latency_ms'] = tbf_latency_ms(
                        bw, int(spec.get('mtu') or 1500))
            net.addLink(a, b, port1=l['a_port'], port2=l['b_port'],
                        intfName1=l['a_intf'], intfName2=l['b_intf'],
                        cls=Link, cls1=TCIntf if params1 else Intf, cls2=Intf,
                        params1=params1, params2={})
        net.build()
        mtu = int(spec.get('mtu') or 1500)
        for node in list(self.hosts.values()) + list(self.switches.values()):
            for intf in node.intfList():
                if intf.name == 'lo':
                    continue
                node.cmd('ip link set dev %s mtu %d' % (intf.name, mtu))
                disable_offloads(node, intf.name)
        for h in self.hosts.values():
            h.cmd('sysctl -qw net.ipv6.conf.all.disable_ipv6=1')
        net.staticArp()
        net.start()
        return {'hosts': {n: {'pid': h.pid} for n, h in self.hosts.items()},
                'switches': {n: {'pid': s.proc.pid}
                             for n, s in self.switches.items()}}

    def node(self, name):
        if name in self.hosts:
            return self.hosts[name]
        if name in self.switches:
            return self.switches[name]
        raise KeyError('no node %r' % name)

    def op_cmd(self, req):
        host = self.hosts[req['host']]
        p = host.popen(req['args'], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            out, _ = p.communicate(timeout=float(req.get('timeout') or 10))
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            raise RuntimeError('timed out: %s' % ' '.join(req['args']))
        return {'rc': p.returncode,
                'output': out.decode('utf-8', 'replace')}

    def op_popen(self, req):
        name = req['name']
        if name in self.procs and self.procs[name].poll() is None:
            raise RuntimeError('process %r is already running' % name)
        env = dict(os.environ)
        env.update(req.get('env') or {})
        log = open(req['log'], 'ab') if req.get('log') else subprocess.DEVNULL
        kw = dict(stdout=log, stderr=subprocess.STDOUT,
                  stdin=subprocess.DEVNULL, env=env)
        try:
            if req.get('host'):
                p = self.hosts[req['host']].popen(req['args'], **kw)
            else:
                p = subprocess.Popen(req['args'], **kw)
        finally:
            if log is not subprocess.DEVNULL:
                log.close()
        self.procs[name] = p
        self.reported.discard(name)
        return {'pid': p.pid}

    def op_signal(self, req):
        p = self.procs.get(req['name'])
        if p is None:
            sw = self.switches.get(req['name'])
            p = sw.proc if sw else None
        if p is None:
            raise KeyError('no process %r' % req['name'])
        if p.poll() is None:
            p.send_signal(int(req['sig']))
        return {}

    def stop(self):
        """Stops started processes (TERM, then KILL after a grace period),
        then the switches and the network."""
        self.stopping = True
        live = [p for p in self.procs.values() if p.poll() is None]
        for p in live:
            try:
                p.terminate()
            except OSError:
                pass
        deadline = time.monotonic() + STOP_GRACE_S
        for p in live:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.net is not None:
            self.net.stop()
            self.net = None

    # --- watcher ----------------------------------------------------------

    def watch(self):
        """Reports processes that end, so the orchestrator notices a crashed
        switch or agent at once."""
        while True:
            time.sleep(0.1)
            items = list(self.procs.items())
            items += [(n, s.proc) for n, s in list(self.switches.items())
                      if s.proc is not None]
            for name, p in items:
                rc = p.poll()
                if rc is not None and name not in self.reported:
                    self.reported.add(name)
                    self.send({'event': 'exit', 'name': name, 'pid': p.pid,
                               'rc': rc, 'stopping': self.stopping})


def main():
    setLogLevel(os.environ.get('HOMATB_MN_LOG', 'info'))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), 'w')
    # Mininet prints to stdout in places; keep the protocol channel clean.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    r = Runner(stdout)
    signal.signal(signal.SIGTERM, lambda *_: sys.stdin.close())
    threading.Thread(target=r.watch, daemon=True).start()
    r.send({'event': 'ready'})
    ops = {'build': r.op_build, 'cmd': r.op_cmd, 'popen': r.op_popen,
           'signal': r.op_signal}
    try:
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            req = {}
            try:
                req = json.loads(line)
                if req.get('op') == 'stop':
                    r.stop()
                    r.send({'id': req.get('id'), 'ok': True})
                    return
                data = ops[req['op']](req)
                r.send({'id': req.get('id'), 'ok': True, 'data': data})
            except Exception as e:  # reported to the orchestrator, not fatal
                r.send({'id': req.get('id'), 'ok': False,
                        'error': '%s: %s' % (type(e).__name__, e)})
    except (ValueError, OSError):
        pass  # stdin closed by SIGTERM
    finally:
        r.stop()


if __name__ == '__main__':
    main()
