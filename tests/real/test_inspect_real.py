"""`loadbench inspect --json` on real safetensors and GGUF files, checked against oracle.py (an
independent reader written from the format specifications) and against MANIFEST.tsv.

Each file is taken from tests/real/ when it was copied there, else from ../shared/testdata/real/
next to this checkout (files whose license does not allow copying live only there), and is
skipped, by name, when it is in neither. Every file's sha256 is checked against the MANIFEST.

Run with /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/real. LOADBENCH_BIN names the
loadbench binary (default build/loadbench of this checkout)."""
import collections
import csv
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHARED = os.path.normpath(os.path.join(REPO, "..", "shared", "testdata", "real"))
BIN = os.path.abspath(os.environ.get("LOADBENCH_BIN", os.path.join(REPO, "build", "loadbench")))
FULL_MANIFEST = os.path.join(SHARED, "MANIFEST.tsv")
LOCAL_MANIFEST = os.path.join(HERE, "MANIFEST.tsv")

_spec = importlib.util.spec_from_file_location("real_oracle", os.path.join(HERE, "oracle.py"))
oracle = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(oracle)

needs_bin = pytest.mark.skipif(not os.access(BIN, os.X_OK),
                               reason=f"no loadbench at {BIN} (build it or set LOADBENCH_BIN)")


def read_manifest(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


ROWS = read_manifest(FULL_MANIFEST if os.path.isfile(FULL_MANIFEST) else LOCAL_MANIFEST)
by_row = pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])


def real_file(row):
    """The path of the row's file, its size and sha256 checked against the MANIFEST."""
    for folder in (HERE, SHARED):
        path = os.path.join(folder, row["file"])
        if os.path.isfile(path):
            break
    else:
        pytest.skip(f"{row['file']} is in neither {HERE} nor {SHARED}")
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    assert (os.path.getsize(path), digest) == (int(row["size_bytes"]), row["sha256"]), \
        f"{path} is not the file the MANIFEST describes"
    return path


def manifest_dtypes(row):
    """'F16:9,F32:3' -> Counter({'f16': 9, 'f32': 3}); '-' -> Counter()."""
    if row["dtypes"] == "-":
        return collections.Counter()
    pairs = (item.split(":") for item in row["dtypes"].split(","))
    return collections.Counter({name.lower(): int(n) for name, n in pairs})


def inspect(path):
    r = subprocess.run([BIN, "inspect", "--json", path], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, \
        f"loadbench inspect --json {path} exited {r.returncode}: {r.stderr.strip()}"
    return json.loads(r.stdout)


def table_disagreements(label, table, j):
    """Every field where inspect's tensor table `j` differs from the oracle's `table`, one line
    each: file, tensor, field, both values."""
    out = []

    def differ(what, got, want):
        if got != want:
            out.append(f"{label}: {what}: inspect {got!r}, oracle {want!r}")

    differ("format", j.get("format"), table.format)
    got = j.get("tensors", [])
    differ("tensor order", [t.get("name") for t in got], [t.name for t in table.tensors])
    mine = {t.name: t for t in table.tensors}
    for t in got:
        want = mine.get(t.get("name"))
        if want is None:
            continue  # already reported by the order line
        for field in ("dtype", "shape", "offset", "size"):
            differ(f"tensor {want.name!r} {field}", t.get(field), getattr(want, field))
    return out


@by_row
def test_oracle_agrees_with_the_manifest(row):
    path = real_file(row)
    table = oracle.read(path)
    assert table.format == ("gguf" if row["kind"].startswith("gguf") else "safetensors")
    if table.format == "gguf":
        assert row["kind"] == f"gguf-v{table.header['version']}"
    assert len(table.tensors) == int(row["tensor_count"])
    assert collections.Counter(t.dtype for t in table.tensors) == manifest_dtypes(row)


@needs_bin
@by_row
def test_inspect_agrees_with_the_oracle_and_the_manifest(row):
    path = real_file(row)
    table = oracle.read(path)
    j = inspect(path)
    wrong = table_disagreements(row["file"], table, j)

    def differ(what, got, want):
        if got != want:
            wrong.append(f"{row['file']}: {what}: inspect {got!r}, expected {want!r}")

    tensors = j.get("tensors", [])
    differ("file_bytes", j.get("file_bytes"), table.file_bytes)
    differ("tensor_bytes (vs. the sum of its sizes)", j.get("tensor_bytes"),
           sum(t.get("size", 0) for t in tensors))
    differ("tensor_bytes (vs. the oracle)", j.get("tensor_bytes"), table.tensor_bytes)
    if table.tensors:  # with no tensors, where an empty data section starts is moot
        differ("data_offset", j.get("data_offset"), table.data_offset)
    differ("tensor count (vs. MANIFEST)", len(tensors), int(row["tensor_count"]))
    differ("dtypes (vs. MANIFEST)",
           dict(collections.Counter(str(t.get("dtype")).lower() for t in tensors)),
           dict(manifest_dtypes(row)))
    assert not wrong, "\n".join(wrong)


@needs_bin
@by_row
def test_format_is_detected_from_the_content_not_the_name(row):
    path = real_file(row)
    table = oracle.read(path)
    with tempfile.TemporaryDirectory(prefix="loadbench-real-") as tmp:
        anonymous = os.path.join(tmp, "model.bin")
        shutil.copyfile(path, anonymous)
        j = inspect(anonymous)
    wrong = table_disagreements(f"{row['file']} as model.bin", table, j)
    assert not wrong, "\n".join(wrong)


@pytest.mark.skipif(not os.path.isfile(FULL_MANIFEST), reason=f"no {FULL_MANIFEST}")
def test_the_local_manifest_lists_the_copied_files_as_the_full_one_does():
    full = {r["file"]: r for r in read_manifest(FULL_MANIFEST)}
    local = read_manifest(LOCAL_MANIFEST)
    for r in local:
        assert full.get(r["file"]) == r, f"{r['file']}: local MANIFEST row differs"
    copied = {n for n in os.listdir(HERE) if n.endswith((".gguf", ".safetensors"))}
    assert copied == {r["file"] for r in local}
