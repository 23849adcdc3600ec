"""One model onto N nodes the way the engines move it: PyTorch's torch.distributed on the gloo
backend (the CPU backend; NCCL is its GPU twin), one process per node, as vLLM, SGLang, Run:ai's
distributed streamer and fastsafetensors call it. Two designs (docs/fleet.md):

    bcast   node 0 pulls the model from the store (ranged GETs of --chunk bytes, --concurrency
            in flight, in order) and, as each chunk lands, posts dist.broadcast(chunk,
            async_op=True), keeping a window of work handles in flight (pipelined, as the
            streamers do); the other nodes post the matching broadcasts into their buffer.
    stripe  node k pulls chunks k, k + N, ...; per round of N chunks, dist.all_gather, posted
            as soon as this node's chunk of the round is in while its next ones are in flight.

Under LOADBENCH_PATTERN=tp a node needs only its slices of every tensor (loaders/use/part.h):
bcast becomes a scatter (node 0 pulls the model; per tensor, as it lands, dist.scatter of each
node's slices, as fastsafetensors shards a tensor), stripe becomes each node pulling its own
slices (no collective). Each node verifies what it needs: the whole model's checksum, or its
part's (xxh3-64 of its slices in table order, the harness's part_checksums[k]).

    python3 torch_fleet.py --design bcast|stripe [--chunk 4MiB] [--port 29500]
                           [--concurrency 4] http://HOST:PORT/KEY | FILE

A node's place is its environment's, as the harness gives every reader of a run (docs/exec.md):
LOADBENCH_READER=K/N, LOADBENCH_FLEET_PEERS (every node's address; unset: all on 127.0.0.1),
LOADBENCH_FLEET_TOKEN, LOADBENCH_DEADLINE (CLOCK_MONOTONIC seconds), LOADBENCH_PATTERN. The
nodes meet at node 0's address and --port (torch's TCPStore, every key under the run's token);
gloo's connections use the interface that holds this node's address. The clock starts after
the rendezvous and a barrier: `ready` when every byte this node needs is in its buffer, `done`
once the checksum has read it; `detail` lines carry the fleet's figures (design, node, nodes,
ready_s, connect_s, store_bytes, store_requests, peer_rx_bytes, peer_tx_bytes). A failure is
one line on stderr and exit 1, at the latest by the deadline; a bad command line exits 2.
"""
import argparse
import collections
import datetime
import fcntl
import http.client
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse

import lbpeer

# torch's C++ logging (glog) writes its own lines to stderr when a socket times out: quiet it,
# so that a failure is the one line this peer writes. Read when torch loads.
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
os.environ.setdefault("GLOG_minloglevel", "3")
torch = lbpeer.need("torch", "python3-torch", "make peers")
lbpeer.need("xxhash", "python3-xxhash")
import torch.distributed as dist  # noqa: E402

UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
         "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}
IO_TIMEOUT_S = 60        # one store request's socket may sit idle this long
NO_DEADLINE_S = 300      # the bound on a run given no LOADBENCH_DEADLINE
RESERVE_S = 0.5          # kept from the deadline to name a failure and exit
NAMING_S = 0.3           # a node's head start over node 0 in naming the absent ones
WINDOW = 16              # collectives in flight: gloo runs two at a time, the rest queue
SIOCGIFADDR = 0x8915


def size(text):
    m = re.fullmatch(r"(\d+)\s*([a-zA-Z]*)", text.strip())
    if not m or m.group(2).lower() not in UNITS or int(m.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (4MiB, 65536)")
    return int(m.group(1)) * UNITS[m.group(2).lower()]


def bounded(lo, hi):
    def parse(text):
        if not re.fullmatch(r"\d+", text) or not lo <= int(text) <= hi:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer in [{lo}, {hi}]")
        return int(text)
    return parse


def parse_args():
    p = argparse.ArgumentParser(prog="torch_fleet.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--design", choices=["bcast", "stripe"], required=True,
                   help="node 0 pulls and broadcasts, or stripes pulled and all-gathered")
    p.add_argument("--chunk", type=size, default=4 << 20,
                   help="bytes per store request and per collective (default 4MiB)")
    p.add_argument("--port", type=bounded(1, 65535), default=29500,
                   help="the rendezvous's port at node 0's address (default 29500)")
    p.add_argument("--concurrency", type=bounded(1, 256), default=4,
                   help="store requests in flight (default 4)")
    p.add_argument("model", help="http://HOST:PORT/KEY (the exec strategy's {file} via "
                                 "http), or a weight file")
    return p.parse_args()


class Failed(Exception):
    """The node cannot go on: the message says which node and why (one line, exit 1)."""


# Where this node stands: the harness's variables (loaders/blocks/peers.h reads the same).

class Place:
    def __init__(self):
        reader = os.environ.get("LOADBENCH_READER") or "0/1"
        m = re.fullmatch(r"(\d+)/(\d+)", reader)
        if not m or not int(m.group(1)) < int(m.group(2)):
            raise Failed(f"LOADBENCH_READER={reader}: not K/N with 0 <= K < N")
        self.node, self.nodes = int(m.group(1)), int(m.group(2))
        peers = os.environ.get("LOADBENCH_FLEET_PEERS")
        self.addresses = peers.split(",") if peers else ["127.0.0.1"] * self.nodes
        if len(self.addresses) < self.nodes:
            raise Failed(f"LOADBENCH_FLEET_PEERS names {len(self.addresses)} addresses for "
                         f"{self.nodes} readers")
        self.token = os.environ.get("LOADBENCH_FLEET_TOKEN", "")
        if self.nodes > 1 and not re.fullmatch(r"[0-9a-f]{32}", self.token):
            raise Failed("LOADBENCH_FLEET_TOKEN: not 32 hex digits; the harness gives every "
                         "run of several readers a token of its own")
        deadline = os.environ.get("LOADBENCH_DEADLINE")
        try:
            self.deadline = float(deadline) if deadline else time.monotonic() + NO_DEADLINE_S
        except ValueError:
            raise Failed(f"LOADBENCH_DEADLINE={deadline}: not a time in seconds") from None
        try:
            self.pattern = lbpeer.parse_pattern(os.environ.get("LOADBENCH_PATTERN", ""))
        except ValueError as e:
            lbpeer.unsupported(f"torch_fleet: {e}")

    def left(self, what):
        """Seconds to the deadline; Failed naming `what` once it has passed."""
        s = self.deadline - time.monotonic()
        if s <= 0:
            raise Failed(f"node {self.node}: {what}: the run's deadline passed")
        return s

    def timeout(self, what, early=0.0):
        """The time a wait on torch may take: to the deadline, less RESERVE_S in which to name
        what did not come and leave before the harness kills the node (and less `early`)."""
        s = self.left(what) - RESERVE_S - early
        if s <= 0:
            raise Failed(f"node {self.node}: {what}: the run's deadline passed")
        return datetime.timedelta(seconds=s)


# The store: ranged GETs of an http:// object (one keep-alive connection per thread), or
# preads of a file; each counted.

class Store:
    def __init__(self, model, place):
        self.model, self.place = model, place
        self.requests = self.bytes = 0
        self._lock, self._local = threading.Lock(), threading.local()
        url = urllib.parse.urlsplit(model)
        self.http = url.scheme == "http"
        if self.http:
            if not url.hostname:
                raise Failed(f"{model}: not http://HOST:PORT/KEY")
            self.host, self.port = url.hostname, url.port or 80
            self.path = urllib.parse.quote(url.path or "/") + (f"?{url.query}" if url.query else "")
            head = bytearray(4096)  # the table's first reads, and the object's size
            self.size = self._get(memoryview(head), 0, whole=True)
            self.head = bytes(head[:min(self.size, len(head))])
            self.requests, self.bytes = 1, len(self.head)
        else:
            self.fd = os.open(model, os.O_RDONLY)  # OSError: one line (lbpeer.guarded)
            self.size = os.fstat(self.fd).st_size

    def read(self, offset, length):
        """`length` bytes at `offset` (the table's reads: the first 4 KiB are held)."""
        if self.http and offset + length <= len(self.head):
            return self.head[offset:offset + length]
        buf = bytearray(length)
        self.read_into(memoryview(buf), offset)
        return bytes(buf)

    def read_into(self, view, offset):
        """Fills `view` with the bytes at `offset`, counted as one request."""
        if offset + len(view) > self.size:
            raise lbpeer.BadModel(f"{self.model}: bytes [{offset}, +{len(view)}) lie past its "
                                  f"end ({self.size})")
        if self.http:
            self._get(view, offset)
        else:
            got = 0
            while got < len(view):
                n = os.preadv(self.fd, [view[got:]], offset + got)
                if n == 0:
                    raise lbpeer.BadModel(f"{self.model}: ends at {offset + got}")
                got += n
        with self._lock:
            self.requests += 1
            self.bytes += len(view)

    def _connection(self):
        c = getattr(self._local, "conn", None)
        if c is None:
            c = self._local.conn = http.client.HTTPConnection(self.host, self.port,
                                                              timeout=IO_TIMEOUT_S)
        return c

    def _get(self, view, offset, whole=False):
        """One ranged GET into `view`; with `whole`, the object's size from Content-Range (the
        view may then be longer than the object). A keep-alive connection the server closed
        between requests is opened again once."""
        rng = f"bytes={offset}-{offset + len(view) - 1}"
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.request("GET", self.path, headers={"Range": rng})
                resp = conn.getresponse()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                if attempt:
                    raise
        return self._body(resp, view, offset, whole)

    def _body(self, resp, view, offset, whole):
        where = f"{self.model} [{offset}, +{len(view)})"
        if resp.status == 404:
            raise lbpeer.BadModel(f"{self.model}: no such object (HTTP 404)")
        if resp.status != 206:
            raise lbpeer.BadModel(f"{where}: HTTP {resp.status} {resp.reason}; a ranged GET "
                                  "needs 206")
        m = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", resp.getheader("Content-Range", ""))
        if not m or int(m.group(1)) != offset:
            raise lbpeer.BadModel(f"{where}: Content-Range {resp.getheader('Content-Range')}")
        n, total = int(m.group(2)) - offset + 1, int(m.group(3))
        if n != len(view) and not (whole and offset + n == total):
            raise lbpeer.BadModel(f"{where}: the server sent {n} bytes")
        got = 0
        while got < n:
            self.place.left(f"GET {where}")
            k = resp.readinto(view[got:n])
            if not k:
                raise lbpeer.BadModel(f"{where}: the connection closed after {got} bytes")
            got += k
        return total


class Fetcher:
    """Ranged reads of `jobs` [(file offset, view)] on `threads` threads, taken in order; wait(i)
    returns once job i is in, or raises the first failure of any."""

    def __init__(self, store, jobs, threads, place):
        self.store, self.jobs, self.place = store, jobs, place
        self.landed = [threading.Event() for _ in jobs]
        self.error, self.next = None, 0
        self._lock = threading.Lock()
        for _ in range(min(threads, len(jobs))):
            threading.Thread(target=self._work, daemon=True).start()

    def _work(self):
        while True:
            with self._lock:
                if self.next == len(self.jobs) or self.error:
                    return
                i, self.next = self.next, self.next + 1
            try:
                self.store.read_into(self.jobs[i][1], self.jobs[i][0])
            except Exception as e:  # any failure ends the node, named by the waiter
                with self._lock:
                    self.error = self.error or e
                for ev in self.landed:
                    ev.set()
                return
            self.landed[i].set()

    def wait(self, i):
        while not self.landed[i].wait(self.place.left(f"store request {i}")):
            pass  # woken at the deadline: left() raises
        if self.error:
            e = self.error
            raise Failed(f"node {self.place.node}: the store: "
                         f"{e.strerror if isinstance(e, OSError) and e.strerror else e}")

    def wait_all(self):
        for i in range(len(self.jobs)):
            self.wait(i)


# The rendezvous: torch's TCPStore at node 0's address, every key under the run's token.

def interface_of(address):
    """The name of this machine's interface that holds `address` (IPv4), where gloo must bind:
    left to itself it binds where the host name resolves, which on a cluster's node is not its
    NIC. None where no interface holds it."""
    if address.startswith("127."):
        return "lo"
    try:
        want = socket.inet_aton(socket.gethostbyname(address))
    except OSError:
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                got = fcntl.ioctl(s.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue  # no IPv4 address
            if got[20:24] == want:
                return name
    try:  # a secondary address, which SIOCGIFADDR does not give: iproute2 lists it
        out = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True,
                             text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for w in (line.split() for line in out.splitlines()):
        if len(w) > 3 and w[3].split("/")[0] == socket.inet_ntoa(want):
            return w[1]
    return None


def first_line(e):
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def rendezvous(place, port):
    """Meets the other nodes: node 0 holds the TCPStore at its address and `port`, every node
    says it is there under the run's token, then gloo's process group and a barrier. Returns
    the store (it must outlive the group) and the seconds it took. A node that never comes is
    named by the others at the deadline."""
    k, here, at = place.node, place.addresses[place.node], f"{place.addresses[0]}:{port}"
    ifname = interface_of(here)
    if ifname is None:
        raise Failed(f"node {k}: no interface of this machine holds its address {here} "
                     "(LOADBENCH_FLEET_PEERS)")
    os.environ["GLOO_SOCKET_IFNAME"] = ifname
    start = time.monotonic()
    try:
        store = dist.TCPStore(place.addresses[0], port, place.nodes, k == 0,
                              place.timeout("the rendezvous"), wait_for_workers=False)
    except (RuntimeError, OSError) as e:
        raise Failed(f"node {k}: " + (f"cannot hold the rendezvous at {at}: {first_line(e)}"
                                      if k == 0 else f"no rendezvous at {at} (node 0's) by "
                                      f"the deadline: {first_line(e)}")) from None
    # Every key under the token: a process that does not know it can connect to the store, but
    # neither takes a node's place nor reads the keys that carry the nodes' gloo addresses.
    tokened = dist.PrefixStore(f"loadbench-fleet/{place.token}/", store)
    keys = [f"node/{j}" for j in range(place.nodes)]
    tokened.set(keys[k], here)
    try:
        # The others give up before node 0 does, so that the store is still there to say
        # which nodes never came.
        tokened.wait(keys, place.timeout("the rendezvous", early=0 if k == 0 else NAMING_S))
    except RuntimeError as e:
        raise Failed(f"node {k}: {missing(tokened, keys, place, at, e)}") from None
    try:
        dist.init_process_group("gloo", store=tokened, rank=k, world_size=place.nodes,
                                timeout=place.timeout("the rendezvous"))
        dist.barrier()
    except RuntimeError as e:
        raise Failed(f"node {k}: the process group at {at}: {first_line(e)}") from None
    return store, time.monotonic() - start


def missing(store, keys, place, at, e):
    """Why the nodes did not all join: the ones that did not, with their addresses."""
    gone = []
    for j, key in enumerate(keys):
        try:
            store.wait([key], datetime.timedelta(milliseconds=20))  # PrefixStore has no check()
        except RuntimeError as why:
            if "timeout" not in str(why).lower():  # the store itself is gone: node 0 ended
                return f"the rendezvous at {at} ended: {first_line(e)}"
            gone.append(j)
    names = ", ".join(f"node {j} ({place.addresses[j]})" for j in gone)
    return f"{names or 'a node'} did not join the rendezvous at {at} by the deadline"


# The designs. Each returns the views of what this node needs, in table order, once every byte
# is in its buffer.

def tree_links(rank, size):
    """(sends, receives) of `rank` in gloo's broadcast from rank 0, a binomial tree
    (gloo/broadcast.cc): in round i the nodes that have the data send it to the node whose
    rank differs in bit i. The root sends ceil(log2 N) copies of each chunk."""
    dim = (size - 1).bit_length()
    mask, sends, recvs = (1 << dim) - 1, 0, 0
    for i in range(dim):
        mask ^= 1 << i
        peer = rank ^ (1 << i)
        if rank & mask or peer >= size:
            continue
        if rank & (1 << i):
            recvs += 1
        else:
            sends += 1
    return sends, recvs


class Node:
    """One node's load: its place, the store, the table, the collectives in flight and what it
    moved (peer bytes as gloo's algorithms move them: payload, not headers)."""

    def __init__(self, args, place, store, tensors):
        self.args, self.place, self.store, self.tensors = args, place, store, tensors
        self.k, self.n, self.chunk = place.node, place.nodes, args.chunk
        self.rx = self.tx = 0
        self.window = collections.deque()
        nonempty = [t for t in tensors if t.size]
        self.lo = min((t.offset for t in nonempty), default=0)
        self.hi = max((t.offset + t.size for t in nonempty), default=0)

    def post(self, work, what, then=None, keep=None):
        """A collective in flight, `then` to run once it completes and `keep` (tensors it reads)
        held until then; past WINDOW of them, the oldest is waited for."""
        self.window.append((work, what, then, keep))
        if len(self.window) > WINDOW:
            self.settle()

    def settle(self):
        work, what, then, _ = self.window.popleft()
        try:
            work.wait(self.place.timeout(what))
        except RuntimeError as e:
            raise Failed(f"node {self.k}: {what}: {first_line(e)}") from None
        if then is not None:
            then()

    def drain(self):
        while self.window:
            self.settle()

    def span(self):
        """A buffer of the model's tensor span, its tensor (views of it share its memory) and
        its chunks [(file offset, bytes)]."""
        buf = bytearray(self.hi - self.lo)
        # frombuffer refuses an empty buffer (a model without tensor bytes)
        whole = torch.frombuffer(buf, dtype=torch.uint8) if buf else torch.zeros(0).byte()
        chunks = [(self.lo + a, min(self.chunk, self.hi - self.lo - a))
                  for a in range(0, self.hi - self.lo, self.chunk)]
        return buf, whole, chunks

    def tensor_views(self, buf):
        view = memoryview(buf)
        return [view[t.offset - self.lo:t.offset - self.lo + t.size] for t in self.tensors]

    def fetch(self, buf, chunks):
        view = memoryview(buf)
        return Fetcher(self.store, [(off, view[off - self.lo:off - self.lo + n])
                                    for off, n in chunks], self.args.concurrency, self.place)


def bcast(node):
    """Node 0 pulls; each chunk is broadcast as it lands, WINDOW broadcasts in flight."""
    buf, whole, chunks = node.span()
    fetch = node.fetch(buf, chunks) if node.k == 0 else None
    sends, recvs = tree_links(node.k, node.n)
    for i, (off, n) in enumerate(chunks):
        if fetch:
            fetch.wait(i)
        if node.n > 1:
            a = off - node.lo
            node.post(dist.broadcast(whole[a:a + n], src=0, async_op=True),
                      f"broadcast of chunk {i}")
            node.tx, node.rx = node.tx + sends * n, node.rx + recvs * n
    node.drain()
    return node.tensor_views(buf)


def stripe(node):
    """Node k pulls chunks k, k + N, ...; per round of N chunks an all_gather, posted once this
    node's chunk of it is in while the store requests for its next ones are in flight. gloo's
    all_gather needs equal sizes: the last round is padded and copied into place."""
    buf, whole, chunks = node.span()
    mine = chunks[node.k::node.n]
    fetch = node.fetch(buf, mine)
    for r in range((len(chunks) + node.n - 1) // node.n):
        if r < len(mine):
            fetch.wait(r)
        if node.n == 1:
            continue
        idx = range(r * node.n, (r + 1) * node.n)
        if all(i < len(chunks) and chunks[i][1] == node.chunk for i in idx):
            outs = [whole[chunks[i][0] - node.lo:][:node.chunk] for i in idx]
            node.post(dist.all_gather(outs, outs[node.k], async_op=True), f"all_gather {r}")
        else:
            outs = [torch.empty(node.chunk, dtype=torch.uint8) for _ in idx]
            pad = torch.zeros(node.chunk, dtype=torch.uint8)
            if r < len(mine):
                pad[:mine[r][1]] = whole[mine[r][0] - node.lo:][:mine[r][1]]
            node.post(dist.all_gather(outs, pad, async_op=True), f"all_gather {r}",
                      then=lambda outs=outs, idx=idx: unpad(node, whole, chunks, outs, idx))
        # gloo's ring: each node sends and receives N - 1 (padded) chunks per round
        node.tx += (node.n - 1) * node.chunk
        node.rx += (node.n - 1) * node.chunk
    node.drain()
    return node.tensor_views(buf)


def unpad(node, whole, chunks, outs, idx):
    """The last round's chunks from their padded outputs into their places."""
    for out, i in zip(outs, idx):
        if i < len(chunks):
            a, n = chunks[i][0] - node.lo, chunks[i][1]
            whole[a:a + n] = out[:n]


def part_layout(node):
    """This node's part under tp: a buffer of its pieces in table order (the part's bytes, as
    the harness checksums them), and per tensor its cut and its place in that buffer."""
    _, dim = node.place.pattern
    cuts, at = [], 0
    for t in node.tensors:
        cut = lbpeer.tp_cut(t, dim, node.n, node.args.model)
        cuts.append((t, cut, at))
        at += t.size // node.n
    return bytearray(at), cuts


def slices(whole, node, t, cut):
    """Node 0's inputs to a tensor's scatter: each node's slices of it, contiguous (a view
    along dimension 0; a copy where the cut is strided, as fastsafetensors' .contiguous())."""
    x = whole[t.offset - node.lo:t.offset - node.lo + t.size].view(cut.outer,
                                                                    cut.length * cut.unit)
    per = cut.length // node.n * cut.unit
    return [x[:, j * per:(j + 1) * per].contiguous().view(-1) for j in range(node.n)]


def scatter(node):
    """bcast under tp: node 0 pulls the model; per tensor, once its bytes are in, dist.scatter
    of each node's slices (fastsafetensors' shuffle), WINDOW scatters in flight."""
    part, cuts = part_layout(node)
    mine = torch.frombuffer(part, dtype=torch.uint8) if part else None
    buf, whole, chunks = node.span() if node.k == 0 else (None, None, [])
    fetch = node.fetch(buf, chunks) if node.k == 0 else None
    landed = 0
    for t, cut, at in cuts:
        share = t.size // node.n
        if node.k == 0:
            while landed < len(chunks) and chunks[landed][0] < t.offset + t.size:
                fetch.wait(landed)
                landed += 1
        inputs = slices(whole, node, t, cut) if node.k == 0 else None
        # A strided cut's copies must live until the scatter that reads them completes.
        node.post(dist.scatter(mine[at:at + share], inputs, src=0, async_op=True),
                  f"scatter of tensor '{t.name}'", keep=inputs)
        if node.k == 0:
            node.tx += share * (node.n - 1)  # gloo's scatter: the root sends each node its own
        else:
            node.rx += share
    node.drain()
    return [part]


def own_slices(node):
    """stripe under tp: each node pulls its own slices (ranged reads of at most --chunk bytes
    each), no collective: nothing needs moving between nodes."""
    pieces = lbpeer.part_pieces(node.tensors, node.place.pattern, node.k, node.n,
                                node.args.model)
    part = bytearray(sum(n for _, n in pieces))
    view, jobs, at = memoryview(part), [], 0
    for off, n in pieces:
        for a in range(0, n, node.chunk):
            b = min(n, a + node.chunk)
            jobs.append((off + a, view[at + a:at + b]))
        at += n
    Fetcher(node.store, jobs, node.args.concurrency, node.place).wait_all()
    return [part]


DESIGNS = {("bcast", "replicated"): bcast, ("stripe", "replicated"): stripe,
           ("bcast", "tp"): scatter, ("stripe", "tp"): own_slices}


def report(node, design, connect_s, ready_s, table):
    """The fleet's figures, as fleet.cc's records carry them (docs/fleet.md), and the table's
    own reads beside them."""
    for key, value in (("design", f"torch_{design}"), ("node", node.k), ("nodes", node.n),
                       ("chunk", node.chunk),
                       ("ready_s", round(ready_s, 6)), ("connect_s", round(connect_s, 6)),
                       ("store_bytes", node.store.bytes), ("store_requests", node.store.requests),
                       ("peer_rx_bytes", node.rx), ("peer_tx_bytes", node.tx),
                       ("table_bytes", table[0]), ("table_requests", table[1])):
        lbpeer.send(f"detail {key} {json.dumps(value)}")


def load(args):
    place = Place()
    store = Store(args.model, place)
    tensors = lbpeer.table_from_reader(store.read, store.size, args.model)
    # The table's reads are the node's own, before the clock: not the design's store traffic.
    table = (store.bytes, store.requests)
    store.bytes = store.requests = 0
    node = Node(args, place, store, tensors)
    if place.pattern[0] == "tp" and place.nodes > 1:  # a split that cannot be, before any byte
        for t in tensors:
            lbpeer.tp_cut(t, place.pattern[1], place.nodes, args.model)
    pattern = place.pattern[0] if place.nodes > 1 else "replicated"
    rdv, connect_s = rendezvous(place, args.port) if place.nodes > 1 else (None, 0.0)
    clock = lbpeer.Clock()  # the region: from the barrier to `done`
    views = DESIGNS[(args.design, pattern)](node)
    ready_s = time.perf_counter() - clock.start
    lbpeer.send(f"ready {ready_s:.6f}")
    digest = lbpeer.checksum(views)
    clock.done()
    lbpeer.send(f"checksum {digest}")
    report(node, args.design, connect_s, ready_s, table)
    if rdv is not None:
        # No node leaves while another may still read from it; outside the region.
        try:
            dist.barrier()
        except RuntimeError as e:
            raise Failed(f"node {place.node}: the closing barrier: {first_line(e)}") from None


def main():
    args = parse_args()
    if not dist.is_available() or not dist.is_gloo_available():
        lbpeer.unsupported("python3-torch here has no gloo backend (make peers)")
    code = 0
    try:
        lbpeer.guarded(load, args)  # an OSError or a malformed model: its line, SystemExit(1)
    except SystemExit as e:
        code = e.code
    except Failed as e:
        code = fail_line(e)
    except RuntimeError as e:  # torch's own, outside what the designs name
        reader = os.environ.get("LOADBENCH_READER", "0/1").split("/")[0]
        code = fail_line(f"node {reader}: {first_line(e)}")
    # Leave without the interpreter's teardown: gloo's work queue waiting on a node that died,
    # or a fetch thread in a request, must not hold the process past its line.
    sys.stderr.flush()
    os._exit(code)


def fail_line(message):
    try:
        lbpeer.fail(message)
    except SystemExit as e:
        return e.code


if __name__ == "__main__":
    main()
