"""What every script that measures shares with `loadbench run`: one measurement per machine at a
time, and nothing it starts outliving it.

hold_machine(bin) makes the calling script one measurement: unless it already runs under
`loadbench lock` (LOADBENCH_LOCK_FD names the lock it holds), it replaces itself with `loadbench
lock -- <the same command>`, which waits while another measurement runs (saying for whom),
holds the machine lock for the whole script, and kills the script's process group when it ends.
CHILD is what every subprocess call of a measuring script passes (**CHILD): the lock's
descriptor, so that the loadbench commands it starts measure under the lock instead of waiting
for it (subprocess closes every other descriptor), and a child killed (SIGKILL) when the script
dies, by any signal."""
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def hold_machine(loadbench_bin, no_wait=False):
    """Re-executes this script under `loadbench lock` unless it already holds the lock."""
    if os.environ.get("LOADBENCH_LOCK_FD"):
        return
    argv = [loadbench_bin, "lock"] + (["--no-wait"] if no_wait else [])
    argv += ["--", sys.executable, os.path.abspath(sys.argv[0])] + sys.argv[1:]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(loadbench_bin, argv)


def die_with_parent():
    """In the child between fork and exec: SIGKILL when the parent dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _lock_fds():
    fd = os.environ.get("LOADBENCH_LOCK_FD", "")
    return (int(fd),) if fd.isdigit() else ()


CHILD = {"preexec_fn": die_with_parent, "pass_fds": _lock_fds()}
