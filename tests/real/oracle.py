"""An independent reader of safetensors and GGUF headers, written from the format specifications
(not from loadbench's C++), to cross-check `loadbench inspect --json`.

read(path) detects the format from the content and returns a Table: the format name, where the
data section starts, the format's own header fields, and the tensors in file order, each with
its absolute byte offset and size. It raises ValueError, naming the file, on anything the
specifications do not allow. Standard library only.

    python3 tests/real/oracle.py FILE...   prints each file's table

Specifications followed:
- safetensors: https://github.com/huggingface/safetensors (README, "Format").
- GGUF: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md; version 1 as read by
  gguf-py before v1 support was dropped (32-bit counts, lengths and dims). Block sizes are
  ggml's block structs (ggml/src/ggml-common.h).
"""
import json
import os
import struct
import sys
from typing import NamedTuple


class Tensor(NamedTuple):
    name: str
    dtype: str   # lower case: "f32", "bf16", "q8_0", ...
    shape: list  # outermost dimension first
    offset: int  # absolute byte offset in the file
    size: int    # bytes


class Table(NamedTuple):
    format: str        # "safetensors" or "gguf"
    file_bytes: int
    data_offset: int   # where the data section starts (GGUF: may lie past EOF with no tensors)
    header: dict       # safetensors: {"metadata"}; GGUF: {"version", "alignment", "kv_count",
                       # "kv" (the first value of each key), "duplicate_keys"}
    tensors: list      # [Tensor] in file order

    @property
    def tensor_bytes(self):
        return sum(t.size for t in self.tensors)


# safetensors dtype -> bits per element. Sub-byte types (F4, F6_*) must fill whole bytes.
SAFETENSORS_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32,
    "I64": 64, "U64": 64, "F64": 64, "C64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}

# ggml type id -> (name, elements per block, bytes per block), from ggml-common.h's block
# structs. Ids 4, 5 (Q4_2, Q4_3) and 31-33, 36-38 (repacked Q4_0/IQ4_NL) are retired.
# Q8_1 is 36 bytes (two ggml_half and 32 int8): gguf-py's table says 40, from the days its
# d and s were floats; ggml's static_assert is what defines the layout.
GGML_TYPES = {
    0: ("f32", 1, 4), 1: ("f16", 1, 2),
    2: ("q4_0", 32, 18), 3: ("q4_1", 32, 20), 6: ("q5_0", 32, 22), 7: ("q5_1", 32, 24),
    8: ("q8_0", 32, 34), 9: ("q8_1", 32, 36),
    10: ("q2_k", 256, 84), 11: ("q3_k", 256, 110), 12: ("q4_k", 256, 144),
    13: ("q5_k", 256, 176), 14: ("q6_k", 256, 210), 15: ("q8_k", 256, 292),
    16: ("iq2_xxs", 256, 66), 17: ("iq2_xs", 256, 74), 18: ("iq3_xxs", 256, 98),
    19: ("iq1_s", 256, 50), 20: ("iq4_nl", 32, 18), 21: ("iq3_s", 256, 110),
    22: ("iq2_s", 256, 82), 23: ("iq4_xs", 256, 136),
    24: ("i8", 1, 1), 25: ("i16", 1, 2), 26: ("i32", 1, 4), 27: ("i64", 1, 8),
    28: ("f64", 1, 8), 29: ("iq1_m", 256, 56), 30: ("bf16", 1, 2),
    34: ("tq1_0", 256, 54), 35: ("tq2_0", 256, 66), 39: ("mxfp4", 32, 17),
}

GGUF_DEFAULT_ALIGNMENT = 32

# GGUF metadata value types with a fixed size: id -> struct format.
_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
                 10: "<Q", 11: "<q", 12: "<d"}
_GGUF_STRING, _GGUF_ARRAY, _GGUF_UINT32 = 8, 9, 4


def read(path):
    """Reads the header of the safetensors or GGUF file at `path`; the format comes from the
    content, never from the name."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(9)
        f.seek(0)
        if head[:4] == b"GGUF":
            return _read_gguf(f, path, size)
        if len(head) == 9 and head[8:9] == b"{":
            return _read_safetensors(f, path, size)
    raise ValueError(f"{path}: neither GGUF (magic 'GGUF') nor safetensors (u64 length, then '{{')")


def _product(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _unique_keys(path):
    def hook(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise ValueError(f"{path}: safetensors header repeats key {k!r}")
            seen.add(k)
        return dict(pairs)
    return hook


def _read_safetensors(f, path, file_bytes):
    (n,) = struct.unpack("<Q", f.read(8))
    if n > file_bytes - 8:
        raise ValueError(f"{path}: safetensors header length {n} runs past the end "
                         f"({file_bytes} bytes)")
    raw = f.read(n)
    # object_pairs_hook sees the pairs in file order; a dict keeps that order.
    header = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys(path))
    if not isinstance(header, dict):
        raise ValueError(f"{path}: safetensors header is not a JSON object")
    data_offset = 8 + n
    data_bytes = file_bytes - data_offset
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict)
                                     and all(isinstance(v, str) for v in metadata.values())):
        raise ValueError(f"{path}: __metadata__ must map strings to strings")

    entries = []  # (begin, header index, Tensor)
    for index, (name, info) in enumerate(header.items()):
        where = f"{path}: tensor {name!r}"
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise ValueError(f"{where}: want exactly dtype, shape, data_offsets; got {info!r}")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in SAFETENSORS_BITS:
            raise ValueError(f"{where}: unknown dtype {dtype!r}")
        if not (isinstance(shape, list)
                and all(type(d) is int and d >= 0 for d in shape)):
            raise ValueError(f"{where}: shape {shape!r} is not a list of counts")
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(type(o) is int for o in offsets)
                and 0 <= offsets[0] <= offsets[1] <= data_bytes):
            raise ValueError(f"{where}: data_offsets {offsets!r} outside the {data_bytes}-byte "
                             "data section")
        bits = _product(shape) * SAFETENSORS_BITS[dtype]
        if bits % 8:
            raise ValueError(f"{where}: {bits} bits is not a whole number of bytes")
        begin, end = offsets
        if end - begin != bits // 8:
            raise ValueError(f"{where}: {dtype}{shape} is {bits // 8} bytes, data_offsets "
                             f"{offsets} span {end - begin}")
        entries.append((begin, index,
                        Tensor(name, dtype.lower(), list(shape), data_offset + begin, end - begin)))
    entries.sort(key=lambda e: (e[0], e[1]))
    tensors = [t for _, _, t in entries]

    # The specification: the byte buffer is entirely indexed and has no holes.
    pos = data_offset
    for t in tensors:
        if t.offset != pos:
            raise ValueError(f"{path}: tensor {t.name!r} starts at {t.offset}, want {pos} "
                             "(the data section must be covered without holes or overlap)")
        pos += t.size
    if pos != file_bytes:
        raise ValueError(f"{path}: tensors end at {pos}, the file at {file_bytes}")
    return Table("safetensors", file_bytes, data_offset, {"metadata": metadata}, tensors)


class _Cursor:
    """Reads little-endian fields, refusing to read past the end of the file."""

    def __init__(self, f, path, file_bytes):
        self.f, self.path, self.file_bytes, self.pos = f, path, file_bytes, 0

    def take(self, n, what):
        if n > self.file_bytes - self.pos:
            raise ValueError(f"{self.path}: {what} at byte {self.pos} ({n} bytes) runs past the "
                             f"end ({self.file_bytes} bytes)")
        b = self.f.read(n)
        self.pos += n
        return b

    def unpack(self, fmt, what):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]


def _read_gguf(f, path, file_bytes):
    c = _Cursor(f, path, file_bytes)
    c.take(4, "magic")
    version = c.unpack("<I", "version")
    if version not in (1, 2, 3):
        swapped = struct.unpack(">I", struct.pack("<I", version))[0]
        if swapped in (1, 2, 3):
            raise ValueError(f"{path}: big-endian GGUF (version {swapped}) is not supported")
        raise ValueError(f"{path}: unknown GGUF version {version}")
    # Version 1 stored counts, string and array lengths, and tensor dims as u32.
    count = "<I" if version == 1 else "<Q"
    tensor_count = c.unpack(count, "tensor_count")
    kv_count = c.unpack(count, "kv_count")

    def string(what):
        n = c.unpack(count, f"{what} length")
        return c.take(n, what).decode("utf-8", errors="replace")

    def value(vtype, what):
        if vtype in _GGUF_SCALARS:
            return c.unpack(_GGUF_SCALARS[vtype], what)
        if vtype == _GGUF_STRING:
            return string(what)
        if vtype == _GGUF_ARRAY:
            etype = c.unpack("<I", f"{what} element type")
            n = c.unpack(count, f"{what} element count")
            if etype not in _GGUF_SCALARS and etype not in (_GGUF_STRING, _GGUF_ARRAY):
                raise ValueError(f"{path}: {what}: unknown array element type {etype}")
            return [value(etype, f"{what}[{i}]") for i in range(n)]
        raise ValueError(f"{path}: {what}: unknown value type {vtype}")

    kv, kv_types, duplicates = {}, {}, []
    for i in range(kv_count):
        key = string(f"key {i}")
        vtype = c.unpack("<I", f"type of {key}")
        v = value(vtype, key)
        if key in kv:  # the first occurrence wins, as in gguf-py's reader
            duplicates.append(key)
        else:
            kv[key], kv_types[key] = v, vtype

    alignment = GGUF_DEFAULT_ALIGNMENT
    if "general.alignment" in kv:
        alignment = kv["general.alignment"]
        if kv_types["general.alignment"] != _GGUF_UINT32 or alignment <= 0 or \
                alignment & (alignment - 1):
            raise ValueError(f"{path}: general.alignment must be a u32 power of two, "
                             f"got {alignment!r}")

    infos = []
    for i in range(tensor_count):
        name = string(f"name of tensor {i}")
        n_dims = c.unpack("<I", f"n_dims of {name}")
        dims = [c.unpack(count, f"dim {d} of {name}") for d in range(n_dims)]
        gtype = c.unpack("<I", f"type of {name}")
        offset = c.unpack("<Q", f"offset of {name}")
        if gtype not in GGML_TYPES:
            raise ValueError(f"{path}: tensor {name!r}: unknown ggml type {gtype}")
        infos.append((name, dims, gtype, offset))
    data_offset = -(-c.pos // alignment) * alignment

    tensors, names = [], set()
    for name, dims, gtype, offset in infos:
        tname, block, block_bytes = GGML_TYPES[gtype]
        n = _product(dims)
        where = f"{path}: tensor {name!r}"
        if name in names:
            raise ValueError(f"{where} appears twice")
        names.add(name)
        if n % block:
            raise ValueError(f"{where}: {n} elements is not a whole number of {tname} blocks "
                             f"of {block}")
        if offset % alignment:
            raise ValueError(f"{where}: offset {offset} is not a multiple of {alignment}")
        size = n // block * block_bytes
        start = data_offset + offset
        if start > file_bytes or size > file_bytes - start:
            raise ValueError(f"{where}: bytes [{start}, {start + size}) run past the end "
                             f"({file_bytes} bytes)")
        tensors.append(Tensor(name, tname, dims[::-1], start, size))

    by_offset = sorted(tensors, key=lambda t: t.offset)
    for a, b in zip(by_offset, by_offset[1:]):
        if a.offset + a.size > b.offset:
            raise ValueError(f"{path}: tensors {a.name!r} and {b.name!r} overlap")
    header = {"version": version, "alignment": alignment, "kv_count": kv_count, "kv": kv,
              "duplicate_keys": duplicates}
    return Table("gguf", file_bytes, data_offset, header, tensors)


def main(paths):
    for p in paths:
        t = read(p)
        print(f"{p}: {t.format}, {t.file_bytes} bytes, data at {t.data_offset}, "
              f"{len(t.tensors)} tensors, {t.tensor_bytes} bytes")
        for x in t.tensors:
            print(f"  {x.name:40} {x.dtype:8} {str(x.shape):22} {x.offset:>10} {x.size:>10}")


if __name__ == "__main__":
    main(sys.argv[1:])
