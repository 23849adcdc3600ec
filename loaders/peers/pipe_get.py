"""A command that writes a model's one weight file to its stdout (curl -sS URL, aws s3 cp
s3://B/K -, rclone cat REMOTE:B/K), verified: its output read whole into memory, then the
model's tensor table read from those bytes and the checksum computed over them, as the other
peers do from a file. `ready` once the command has written everything and exited 0, `done`
once the checksum has read every tensor's bytes. A single safetensors or WLF file; an index, a
GGUF file or bytes of neither are a failure. Standard library and python3-xxhash only.

    python3 pipe_get.py -- COMMAND [ARG ...]

The command runs in a process group of its own, its stdin /dev/null, its stderr kept aside: it
is killed with its group if this peer is (SIGTERM, SIGINT, SIGHUP; and by the kernel if this
peer dies any other way: PR_SET_PDEATHSIG), and a command that exits non-zero or dies of a
signal fails the peer (exit 1, one line: the status and the command's last stderr line).
"""
import ctypes
import os
import signal
import subprocess
import sys
import tempfile

import lbpeer

lbpeer.need("xxhash", "python3-xxhash")

PR_SET_PDEATHSIG = 1

_child = None


def _die_with_parent(parent):
    """In the child, before exec: killed when this peer dies, in a group of its own."""
    os.setpgid(0, 0)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the peer died before prctl
        os._exit(1)


def _on_signal(sig, frame):
    if _child is not None and _child.poll() is None:
        try:
            os.killpg(_child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)


def last_line(f):
    f.seek(0)
    lines = [x for x in f.read().decode("utf-8", "replace").splitlines() if x.strip()]
    return lines[-1].strip() if lines else ""


def load(argv, clock):
    global _child
    with tempfile.TemporaryFile() as err:
        try:
            _child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=err, bufsize=0,
                                      preexec_fn=lambda: _die_with_parent(parent))
        except OSError as e:
            lbpeer.fail(f"{argv[0]}: cannot run it: {e.strerror or e}")
        # The plain idiom: read() until EOF into one bytes object, which the unbuffered pipe
        # (FileIO.readall) grows in place as it fills (realloc; no copy of what was read).
        data = _child.stdout.read()
        _child.stdout.close()
        status = _child.wait()
        if status != 0:
            how = (f"was killed by signal {-status} ({signal.Signals(-status).name})"
                   if status < 0 else f"exited with status {status}")
            tail = last_line(err)
            lbpeer.fail(f"{os.path.basename(argv[0])} {how}" + (f": {tail}" if tail else ""))
    name = " ".join(argv)
    if not data:
        lbpeer.fail(f"{os.path.basename(argv[0])} wrote nothing to its stdout")
    model = lbpeer.model_from_bytes([data], [name])
    lbpeer.use(clock, lbpeer.tensor_views([data], model.tensors))


def usage():
    sys.stderr.write(f"usage: {lbpeer._PROG} -- COMMAND [ARG ...] (a command that writes one "
                     "safetensors or WLF file to its stdout)\n")
    sys.exit(2)


parent = os.getpid()

if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args or args[0].startswith("-"):
        usage()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    lbpeer.guarded(load, args, lbpeer.Clock())
