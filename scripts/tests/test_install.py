"""Tests of the install (CMakeLists.txt's install rules, docs/install.md): the build tree of
LOADBENCH_BIN installed into a fresh folder with `cmake --install BUILD --prefix P` must give
P/bin/loadbench, P/share/loadbench/ (the analysis without its tests, the peers without theirs,
the experiment files), P/share/doc/loadbench/ and, where the build wrote one, the bash
completion; the installed analysis must run from there alone. The Debian package of the same
tree (`cpack`, what `make deb` runs) must hold the same files under /usr and depend on the
runtime packages.

Run with /usr/bin/python3 -m pytest scripts/tests/test_install.py. LOADBENCH_BIN names the
loadbench binary of a build tree (default build/loadbench of this checkout); its folder is the
tree installed. Nothing is built: a tree never built is skipped."""
import glob
import os
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.abspath(os.environ.get("LOADBENCH_BIN", os.path.join(REPO, "build", "loadbench")))
BUILD = os.path.dirname(BIN)

pytestmark = pytest.mark.skipif(
    not (os.access(BIN, os.X_OK) and os.path.isfile(os.path.join(BUILD, "cmake_install.cmake"))),
    reason=f"no built CMake tree at {BUILD} (build it or set LOADBENCH_BIN)")


def source_files(folder, keep):
    """The files under REPO/folder that the install takes, relative to it: `keep` says which by
    name; nothing under tests/ or __pycache__/."""
    out = set()
    root = os.path.join(REPO, folder)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in ("tests", "__pycache__")]
        for f in filenames:
            if keep(f):
                out.add(os.path.relpath(os.path.join(dirpath, f), root))
    return out


def files_under(root):
    out = set()
    for dirpath, _, filenames in os.walk(root):
        for f in filenames:
            out.add(os.path.relpath(os.path.join(dirpath, f), root))
    return out


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    p = tmp_path_factory.mktemp("prefix")
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", str(p)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return p


def test_binary(prefix):
    exe = prefix / "bin" / "loadbench"
    assert os.access(exe, os.X_OK)
    r = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(prefix)) == ["bin", "share"]
    assert os.listdir(prefix / "bin") == ["loadbench"]


def test_share(prefix):
    share = prefix / "share" / "loadbench"
    assert sorted(os.listdir(share)) == ["analysis", "experiments", "loaders"]
    assert files_under(share / "analysis") == source_files(
        "analysis", lambda f: f.endswith((".py", ".json")))
    assert (share / "analysis" / "__init__.py").is_file()
    assert os.listdir(share / "loaders") == ["peers"]
    assert files_under(share / "loaders" / "peers") == source_files("loaders/peers",
                                                                    lambda f: True)
    assert files_under(share / "experiments") == {
        os.path.basename(f) for f in glob.glob(os.path.join(REPO, "experiments", "*.toml"))}
    # A peer keeps its mode: an exec strategy may start it as a program.
    for f in files_under(share / "loaders" / "peers"):
        src = os.stat(os.path.join(REPO, "loaders", "peers", f)).st_mode & 0o111
        assert os.stat(share / "loaders" / "peers" / f).st_mode & 0o111 == src, f


def test_docs(prefix):
    doc = prefix / "share" / "doc" / "loadbench"
    assert (doc / "README.md").read_bytes() == open(os.path.join(REPO, "README.md"), "rb").read()
    assert files_under(doc / "docs") == {
        os.path.basename(f) for f in glob.glob(os.path.join(REPO, "docs", "*.md"))}


def test_completion(prefix):
    """The completion the build wrote (target loadbench_completion, part of `all`: the binary's
    own `completion bash`) is installed; a tree that wrote none (only `--target loadbench` was
    built, or a binary without the subcommand) installs none."""
    built = os.path.join(BUILD, "generated", "completion", "loadbench")
    installed = prefix / "share" / "bash-completion" / "completions" / "loadbench"
    if not os.path.isfile(built):
        assert not installed.exists()
        assert sorted(os.listdir(prefix / "share")) == ["doc", "loadbench"]
        pytest.skip(f"the build wrote no completion ({built})")
    assert installed.read_bytes() == open(built, "rb").read()
    assert "complete " in installed.read_text()
    assert sorted(os.listdir(prefix / "share")) == ["bash-completion", "doc", "loadbench"]


def test_analysis_runs_from_the_install(prefix, tmp_path):
    """Every analysis entry point starts from the installed package alone (no module or data
    file left behind): its --help, with the source tree out of reach."""
    share = prefix / "share" / "loadbench"
    env = dict(os.environ, PYTHONPATH=str(share), PYTHONDONTWRITEBYTECODE="1")
    mains = sorted(os.path.basename(f)[:-3] for f in glob.glob(str(share / "analysis" / "*.py"))
                   if "__main__" in open(f).read())
    assert "report" in mains
    for name in mains:
        r = subprocess.run(["/usr/bin/python3", "-m", f"analysis.{name}", "--help"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"analysis.{name}: {r.stderr}"
    assert not list(share.rglob("__pycache__"))


@pytest.mark.skipif(shutil.which("cpack") is None or shutil.which("dpkg-deb") is None,
                    reason="no cpack or dpkg-deb (cmake and dpkg)")
def test_deb(tmp_path):
    """The package `make deb` makes, from this tree (uncompressed here: the sanitizer build's
    binary is 200 MB)."""
    config = os.path.join(BUILD, "CPackConfig.cmake")
    r = subprocess.run(["cpack", "--config", config, "-B", str(tmp_path),
                        "-D", "CPACK_DEBIAN_COMPRESSION_TYPE=none"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    debs = glob.glob(str(tmp_path / "loadbench_*.deb"))
    assert len(debs) == 1, os.listdir(tmp_path)
    info = subprocess.run(["dpkg-deb", "-f", debs[0]], capture_output=True, text=True,
                          check=True).stdout
    fields = {}
    for line in info.splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    assert fields["Package"] == "loadbench"
    depends = {d.split()[0] for d in fields["Depends"].split(", ")}
    for p in ["python3", "python3-pandas", "python3-numpy", "python3-scipy",
              "python3-matplotlib", "python3-xxhash", "libfmt9", "libxxhash0", "liburing2",
              "libcurl4", "libpfm4"]:
        assert p in depends, (p, fields["Depends"])
    recommends = {d.split()[0] for d in fields["Recommends"].split(", ")}
    assert {"fio", "linux-perf", "nginx-light", "rclone", "s3fs"} <= recommends
    listing = subprocess.run(["dpkg-deb", "-c", debs[0]], capture_output=True, text=True,
                             check=True).stdout
    paths = {line.split()[-1] for line in listing.splitlines()}
    for p in ["./usr/bin/loadbench", "./usr/share/loadbench/analysis/__init__.py",
              "./usr/share/loadbench/experiments/quick.toml",
              "./usr/share/doc/loadbench/README.md"]:
        assert p in paths
    assert not [p for p in paths if "/tests/" in p or "__pycache__" in p]
