"""A pure-Python safetensors reader doing what safe_open does: the header (8-byte length, JSON),
each file mapped read-only (mmap), and a view per tensor (a memoryview of its bytes, cast to
its element type where memoryview has one), no copy. `ready` once the views exist, `done`
once the checksum has read every byte through them. Standard library and python3-xxhash only;
safetensors only (a WLF or GGUF model is `unsupported`).

    python3 safetensors_py.py MODEL
"""
import mmap

import lbpeer

lbpeer.need("xxhash", "python3-xxhash")

# safetensors dtype to the format a memoryview casts to (little-endian machines). memoryview
# has no 16-bit or 8-bit floats: F16, BF16 and the rest stay views of bytes.
FORMATS = {"BOOL": "?", "U8": "B", "I8": "b", "I16": "h", "U16": "H", "I32": "i", "U32": "I",
           "F32": "f", "I64": "q", "U64": "Q", "F64": "d"}


def view(maps, t):
    raw = maps[t.shard][t.offset:t.offset + t.size]
    fmt = FORMATS.get(t.dtype)
    return raw.cast(fmt) if fmt and t.size else raw


def mapped(path):
    with open(path, "rb") as f:
        return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))


def load(path, clock):
    model = lbpeer.read_model(path)
    lbpeer.need_table(model, "safetensors_py")
    maps = [mapped(f) for f in model.files]
    views = [view(maps, t) for t in model.tensors]
    lbpeer.use(clock, views)


if __name__ == "__main__":
    lbpeer.main(load)
