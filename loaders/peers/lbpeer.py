"""What the peers in this folder share: the LOADBENCH_FD lines, the model's tensor table and the
model's checksum. Standard library only; xxhash is imported by the peer, before its clock starts.

A peer is `python3 PEER.py MODEL`, MODEL being what `loadbench run --file` takes: a weight file,
a safetensors (or WLF) index `*.index.json`, a folder holding one, or a GGUF split's first file.
Its clock starts after its imports (in main()); it then writes, on the file descriptor
LOADBENCH_FD names (the `exec` strategy, docs/exec.md):

    ready SECONDS      the tensors are handed out
    done SECONDS       every byte of every tensor was used (checksummed)
    checksum HEX       xxh3-64 of all tensor bytes in table order (docs/formats.md)
    unsupported WHY    it cannot run here (a missing package, a format it does not read)

Without LOADBENCH_FD (a peer run by hand) the same lines go to stderr.

A peer that has a model's bytes in memory rather than on disk (an object downloaded whole:
boto3_get.py, pipe_get.py) reads its table with model_from_bytes: the same parser as a file's,
given the bytes instead, for safetensors and WLF.
"""
import importlib
import json
import os
import re
import sys
import time
from typing import NamedTuple

MAX_HEADER = 100 << 20  # a safetensors header longer than this is refused, as loadbench does

# safetensors dtype: (bits per element, numpy dtype, torch 1.13 dtype). numpy has no bfloat16
# or 8-bit floats: their bits are kept as unsigned integers of the same width. A dtype with
# neither (the sub-byte floats; for torch 1.13 also U16 to U64 and the 8-bit floats) is kept as
# a flat array of its bytes.
DTYPES = {
    "BOOL": (8, "?", "bool"), "U8": (8, "u1", "uint8"), "I8": (8, "i1", "int8"),
    "F8_E5M2": (8, "u1", None), "F8_E4M3": (8, "u1", None), "F8_E8M0": (8, "u1", None),
    "I16": (16, "<i2", "int16"), "U16": (16, "<u2", None), "F16": (16, "<f2", "float16"),
    "BF16": (16, "<u2", "bfloat16"),
    "I32": (32, "<i4", "int32"), "U32": (32, "<u4", None), "F32": (32, "<f4", "float32"),
    "I64": (64, "<i8", "int64"), "U64": (64, "<u8", None), "F64": (64, "<f8", "float64"),
    "C64": (64, "<c8", "complex64"),
    "F4": (4, None, None), "F6_E2M3": (6, None, None), "F6_E3M2": (6, None, None),
}


class BadModel(Exception):
    """A model this reader cannot take: the message names the file and says why."""


class Tensor(NamedTuple):
    name: str
    dtype: str    # as in the file: "BF16", "F32", ...
    shape: tuple
    shard: int    # index into Model.files
    offset: int   # absolute byte offset in its file
    size: int     # bytes


class Model(NamedTuple):
    format: str    # "safetensors", "wlf" or "gguf"
    files: list    # the weight files, in shard order
    tensors: list  # [Tensor] in table order; None for the formats read here as bytes only


# The LOADBENCH_FD lines.

_PROG = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "peer"


def send(line):
    """One line to LOADBENCH_FD (one write), or to stderr without it."""
    line = " ".join(str(line).split()) + "\n"  # one line, whatever a reason held
    fd = os.environ.get("LOADBENCH_FD")
    if not fd:
        sys.stderr.write(f"{_PROG}: {line}")
        sys.stderr.flush()
        return
    try:
        os.write(int(fd), line.encode())
    except (ValueError, OSError) as e:
        raise OSError(f"LOADBENCH_FD={fd}: cannot write to it ({e})") from None


def unsupported(reason):
    """Says the peer cannot run here, and ends it (exit 0: the reason is the result)."""
    send(f"unsupported {reason}")
    sys.exit(0)


def need(module, package, target="make setup"):
    """Imports `module`, or ends the peer `unsupported`, naming the Debian package."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            unsupported(f"{package} is broken: {e} (reinstall it: {target})")
        unsupported(f"{package} is not installed ({target})")
    except ImportError as e:
        unsupported(f"{package} is broken: {e} (reinstall it: {target})")


class Clock:
    """The peer's own time since its start of loading, and the lines that report it."""

    def __init__(self):
        self.start = time.perf_counter()

    def ready(self):
        send(f"ready {time.perf_counter() - self.start:.6f}")

    def done(self):
        send(f"done {time.perf_counter() - self.start:.6f}")


def checksum(views):
    """xxh3-64 over the bytes of `views` (anything with the buffer protocol) in order, as 16
    lower-case hex digits. Reading every byte is also what makes a load complete."""
    import xxhash  # the peer imported it before its clock started
    h = xxhash.xxh3_64()
    for v in views:
        h.update(v)
    return format(h.intdigest(), "016x")


def use(clock, views, verified=True):
    """The end of every peer's load: `ready` (the views are handed out), the checksum reads
    every byte through them, `done`, then the checksum line (unless the peer read no tensor
    table, so that its bytes are not the model's tensors)."""
    clock.ready()
    digest = checksum(views)
    clock.done()
    if verified:
        send(f"checksum {digest}")


def main(load):
    """Runs `load(path, clock)` on the one argument: a usage error exits 2, a missing file or a
    malformed model exits 1 with one line on stderr."""
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.stderr.write(f"usage: {_PROG} MODEL (a weight file, an index or a folder)\n")
        sys.exit(2)
    guarded(load, sys.argv[1], Clock())


def fail(message):
    """Ends the peer: one line on stderr, exit 1."""
    sys.stderr.write(f"{_PROG}: {' '.join(str(message).split())}\n")
    sys.exit(1)


def guarded(load, *args):
    """Runs `load(*args)`; an OSError or a malformed model ends the peer with one line on stderr
    and exit 1."""
    try:
        load(*args)
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        fail(f"{where}{e.strerror or e}")
    except BadModel as e:
        fail(e)


def need_table(model, peer):
    """Ends the peer `unsupported` when it needs the tensor table and the model's format is one
    it does not read."""
    if model.tensors is None:
        unsupported(f"{peer} reads safetensors models only; this is a {model.format.upper()} "
                    f"model ({model.files[0]})")


# The model: its files, and for safetensors its tensor table.

def read_model(path):
    if os.path.isdir(path):
        return _read_index(_index_in(path))
    kind = _sniff(path)
    if kind == "index":
        return _read_index(path)
    if kind == "safetensors":
        return Model("safetensors", [path], read_safetensors(path, 0))
    if kind == "gguf":
        return Model("gguf", _gguf_split(path), None)
    return Model("wlf", [path], None)


def _sniff(path):
    with open(path, "rb") as f:
        return _kind(f.read(4096), path)


def _kind(head, where):
    """What a file is, from its first bytes (up to 4096): the format's magic, or an index."""
    head = bytes(head)
    text = head.lstrip(b" \t\r\n")
    if text[:1] == b"{" and b"\0" not in head[:16]:
        return "index"
    if head[:4] == b"GGUF":
        return "gguf"
    if head[:4] in (b"GIEW", b"WEIG"):  # WLF's magic, little- or big-endian
        return "wlf"
    if head[8:9] == b"{":
        return "safetensors"
    raise BadModel(f"{where}: not a safetensors, WLF or GGUF file, nor an index")


# One parser per format over `read(offset, length) -> bytes` and the file's size, so that a
# file on disk (read_safetensors) and a file's bytes already in memory (model_from_bytes) are
# read by the same checks.

def _file_reader(f):
    def read(offset, length):
        f.seek(offset)
        return f.read(length)
    return read


def _memory_reader(buf):
    view = memoryview(buf)
    return lambda offset, length: bytes(view[offset:offset + length])


def read_safetensors(path, shard):
    """The tensors of one safetensors file, in the order of their data."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        return _safetensors(path, shard, _file_reader(f), size)


def _safetensors(where, shard, read, size):
    n = int.from_bytes(read(0, 8), "little")
    if n > MAX_HEADER or 8 + n > size:
        raise BadModel(f"{where}: a header of {n} bytes in a file of {size}")
    try:
        header = json.loads(read(8, n))
    except (ValueError, UnicodeDecodeError) as e:
        raise BadModel(f"{where}: the header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise BadModel(f"{where}: the header is not a JSON object")
    data, data_len = 8 + n, size - 8 - n
    tensors = [_tensor(where, shard, name, entry, data, data_len)
               for name, entry in header.items() if name != "__metadata__"]
    tensors.sort(key=lambda t: t.offset)  # stable: header order among equal offsets
    return tensors


def _tensor(where, shard, name, entry, data, data_len):
    try:
        dtype, shape, (begin, end) = entry["dtype"], tuple(entry["shape"]), entry["data_offsets"]
        bits = DTYPES[dtype][0]
        if not all(type(x) is int and x >= 0 for x in (*shape, begin, end)):
            raise ValueError
    except (TypeError, KeyError, ValueError):
        raise BadModel(f"{where}: tensor '{name}': not a valid entry ({entry!r:.80})") from None
    elements = 1
    for d in shape:
        elements *= d
    if elements * bits % 8 or not 0 <= begin <= end <= data_len or \
            end - begin != elements * bits // 8:
        raise BadModel(f"{where}: tensor '{name}': data_offsets [{begin}, {end}] do not hold "
                       f"shape {list(shape)} of {dtype} inside {data_len} bytes of data")
    return Tensor(name, dtype, shape, shard, data + begin, end - begin)


def _index_in(folder):
    found = sorted(e.name for e in os.scandir(folder)
                   if e.name.endswith(".index.json") and e.is_file())
    if len(found) != 1:
        raise BadModel(f"{folder}: a folder holding {len(found)} *.index.json files; "
                       "give a weight file, an index, or a folder holding one index")
    return os.path.join(folder, found[0])


def _read_index(path):
    """An index: the shards are the files its weight_map names, in sorted file-name order, and
    the table is each shard's tensors in that shard's own order, shard after shard (as
    loaders/format/shard_index.cc and model.cc read it)."""
    with open(path, "rb") as f:
        names = index_shards(f.read(), path)
    folder = os.path.dirname(path)
    files = [os.path.join(folder, name) for name in names]
    kinds = {_sniff(f) for f in files}
    if len(kinds) != 1 or kinds & {"index", "gguf"}:
        raise BadModel(f"{path}: shards of {sorted(kinds)}; an index names safetensors or WLF "
                       "files of one format")
    if kinds != {"safetensors"}:
        return Model(kinds.pop(), files, None)
    tensors = [t for k, f in enumerate(files) for t in read_safetensors(f, k)]
    return Model("safetensors", files, tensors)


def index_shards(text, where):
    """The shard names an index's JSON `text` gives: the distinct files its weight_map names,
    in sorted order, each relative to the index's own folder (or prefix)."""
    try:
        weight_map = json.loads(text)["weight_map"]
        names = sorted(set(weight_map.values()))
    except (ValueError, UnicodeDecodeError, KeyError, TypeError, AttributeError):
        raise BadModel(f"{where}: an index without a valid \"weight_map\"") from None
    for name in names:
        if not isinstance(name, str) or os.path.isabs(name) or ".." in name.split("/"):
            raise BadModel(f"{where}: weight_map names {name!r}, outside the index's folder")
    return names


def is_index(head):
    """Whether a file whose first bytes are `head` is an index (JSON), not a weight file."""
    try:
        return _kind(head, "") == "index"
    except BadModel:
        return False


# Models whose bytes are already in memory (the remote peers: an object downloaded whole).

def model_from_bytes(bufs, names):
    """The model whose weight files' bytes are `bufs` (anything with the buffer protocol), in
    shard order, `names` naming them for messages: a Model whose files are the names and whose
    tensors index into `bufs`. Safetensors and WLF, one format; the table as read_model gives
    it, so the checksum is the same as from the files on disk."""
    kinds, tensors = set(), []
    for shard, (buf, name) in enumerate(zip(bufs, names)):
        kind = _kind(memoryview(buf)[:4096], name)
        if kind == "safetensors":
            tensors += _safetensors(name, shard, _memory_reader(buf), len(memoryview(buf)))
        elif kind == "wlf":
            tensors += _wlf(name, shard, _memory_reader(buf), len(memoryview(buf)))
        else:
            raise BadModel(f"{name}: a {kind.upper() if kind != 'index' else 'index'} file; "
                           "this peer reads safetensors and WLF weight files")
        kinds.add(kind)
    if len(kinds) > 1:
        raise BadModel(f"{names[0]}: shards of {sorted(kinds)}; one format only")
    return Model(kinds.pop() if kinds else "safetensors", list(names), tensors)


def tensor_views(bufs, tensors):
    """A memoryview of each tensor's bytes in its shard's buffer, in table order: no copy."""
    views = [memoryview(b).cast("B") for b in bufs]
    return [views[t.shard][t.offset:t.offset + t.size] for t in tensors]


# WLF (docs/formats.md, loaders/format/wlf.h): a 64-byte header, a table of 48-byte entries,
# names and shapes in the aux area, tensors in table order in the data area, a 16-byte tail.
# A big-endian file (its magic reads byte-swapped) has every integer swapped; the checksum is
# of the bytes as stored either way.
WLF_DTYPES = ["F32", "F16", "BF16", "F64", "I8", "U8", "I16", "U16", "I32", "U32", "I64",
              "U64", "BOOL", "F8_E4M3", "F8_E5M2"]  # by code, named as safetensors names them
WLF_TAIL = 0x4C494154464C5757  # "WWLFTAIL"
WLF_MAX_META = 256 << 20


def _wlf(where, shard, read, size):
    import struct
    head = read(0, 64)
    if len(head) < 64 or size < 80:
        raise BadModel(f"{where}: invalid WLF file: {size} bytes is too short")
    order = "<" if head[:4] == b"GIEW" else ">"
    _, version, count, meta, data, file_size, _, _, _ = struct.unpack(order + "IIQQQQQQQ", head)

    def bad(what):
        return BadModel(f"{where}: invalid WLF file: {what}")
    if version != 1:
        raise bad(f"unsupported version {version}")
    if file_size != size:
        raise bad(f"{'truncated' if file_size > size else 'trailing bytes'}: header says "
                  f"{file_size} bytes, file has {size}")
    tail = size - 16
    if struct.unpack(order + "QQ", read(tail, 16)) != (WLF_TAIL, size):
        raise bad(f"tail sentinel missing or wrong at offset {tail}")
    if meta != 64 or data % 4096 or not meta <= data <= tail or data - meta > WLF_MAX_META or \
            count > (data - meta) // 48:
        raise bad(f"areas: meta_offset {meta}, data_offset {data}, {count} tensors")
    area = read(meta, data - meta)
    tensors, prev_end = [], data
    for i in range(count):
        name_off, code, _, shape_off, rank, off, n = struct.unpack_from(order + "QIIQQQQ",
                                                                        area, i * 48)
        end = area.find(b"\0", name_off - meta) if meta <= name_off < data else -1
        if end < 0 or code >= len(WLF_DTYPES) or rank > 8 or shape_off < meta or \
                shape_off - meta + 8 * rank > len(area):
            raise bad(f"tensor {i}: not a valid entry")
        name = area[name_off - meta:end].decode("utf-8", "replace")
        shape = struct.unpack_from(f"{order}{rank}Q", area, shape_off - meta)
        dtype = WLF_DTYPES[code]
        elements = 1
        for d in shape:
            elements *= d
        if elements * DTYPES[dtype][0] // 8 != n or off < prev_end or off % 64 or off + n > tail:
            raise bad(f"tensor {i} '{name}': data [{off}, +{n}) does not hold shape "
                      f"{list(shape)} of {dtype} in place")
        tensors.append(Tensor(name, dtype, tuple(shape), shard, off, n))
        prev_end = off + n
    return tensors


def _gguf_split(path):
    """A GGUF split's files, found by the first one's name (NAME-00001-of-0000N.gguf)."""
    folder, base = os.path.split(path)
    m = re.fullmatch(r"(.*)-00001-of-(\d{5})\.gguf", base)
    if not m or int(m.group(2)) < 2:
        return [path]
    count = int(m.group(2))
    files = [os.path.join(folder, f"{m.group(1)}-{k:05d}-of-{count:05d}.gguf")
             for k in range(1, count + 1)]
    for k, f in enumerate(files):
        if not os.path.isfile(f):
            raise BadModel(f"{f}: missing: split {k + 1} of {count} of {path}")
    return files


def numpy_view(t):
    """(numpy dtype, shape) that a safetensors tensor's bytes are read as."""
    np_dtype = DTYPES[t.dtype][1]
    return (np_dtype, t.shape) if np_dtype else ("u1", (t.size,))


def torch_dtype(torch, t):
    """The torch dtype of a safetensors tensor, or None (kept as a flat uint8 tensor)."""
    name = DTYPES[t.dtype][2]
    return getattr(torch, name) if name else None


def torch_bytes(torch, x):
    """A tensor's bytes as a numpy array sharing its memory (for the checksum)."""
    return x.reshape(-1).view(torch.uint8).numpy()


# A table read through `read(offset, length) -> bytes` (ranged GETs of an object a peer does not
# hold yet: torch_fleet.py).

def table_from_reader(read, size, name):
    """The tensor table of one safetensors or WLF weight file of `size` bytes read through
    `read`, in table order, as read_model gives it. BadModel for an index, a GGUF file or bytes
    of neither."""
    kind = _kind(read(0, min(size, 4096)), name)
    if kind == "safetensors":
        return _safetensors(name, 0, read, size)
    if kind == "wlf":
        return _wlf(name, 0, read, size)
    raise BadModel(f"{name}: a {kind.upper() if kind != 'index' else 'index'} file; this peer "
                   "reads one safetensors or WLF weight file")


# Read patterns (loaders/use/part.h): what reader k of n needs. `replicated` is the whole model;
# `tp[:D]` is its 1/n slice of every tensor along dimension D (0 by default; a tensor of fewer
# dimensions is cut along its last), as part.cc cuts it, so that the part's checksum (xxh3-64 of
# its pieces in order) is the one the harness computes for part_checksums[k].

class Cut(NamedTuple):
    outer: int   # pieces per reader: one per index of the dimensions before the cut
    length: int  # indices along the cut dimension
    unit: int    # bytes per index


def parse_pattern(text):
    """("replicated", 0) or ("tp", D) for the pattern's text; ValueError naming the others."""
    if text in ("", "replicated"):
        return "replicated", 0
    if text == "tp":
        return "tp", 0
    if re.fullmatch(r"tp:\d{1,2}", text):
        return "tp", int(text[3:])
    raise ValueError(f"pattern '{text}': this peer honours replicated and tp[:DIM]")


def tp_cut(t, dim, readers, where):
    """How tensor `t` of model `where` is cut among `readers` along `dim`; BadModel as
    part.cc's CutOf."""
    if not t.shape:
        raise BadModel(f"{where}: tp cannot split tensor '{t.name}' among {readers} readers: "
                       "it is a scalar")
    d = min(dim, len(t.shape) - 1)
    outer = 1
    for x in t.shape[:d]:
        outer *= x
    length = t.shape[d]
    if length % readers:
        raise BadModel(f"{where}: tp cannot split tensor '{t.name}' among {readers} readers: its "
                       f"dimension {d} is {length}, not a multiple of {readers}")
    if outer * length == 0 or t.size % (outer * length):
        raise BadModel(f"{where}: tp cannot split tensor '{t.name}' ({t.dtype}) along "
                       f"dimension {d}: its {t.size} bytes are stored in blocks that a slice "
                       "would cut")
    return Cut(outer, length, t.size // (outer * length))


def tp_pieces(t, cut, k, readers):
    """Reader k's pieces of tensor `t`: [(file offset, bytes)], one per outer index."""
    first, last = cut.length * k // readers, cut.length * (k + 1) // readers
    size = (last - first) * cut.unit
    return [(t.offset + (o * cut.length + first) * cut.unit, size) for o in range(cut.outer)]


def part_pieces(tensors, pattern, k, readers, where):
    """Reader k's pieces of the model, [(file offset, bytes)] in table order: every tensor
    whole under replicated, its slices under tp. Empty pieces are left out."""
    kind, dim = pattern
    if kind == "replicated" or readers == 1:
        return [(t.offset, t.size) for t in tensors if t.size]
    return [p for t in tensors
            for p in tp_pieces(t, tp_cut(t, dim, readers, where), k, readers) if p[1]]
