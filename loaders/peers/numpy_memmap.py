"""numpy.memmap: each weight file mapped read-only once (np.memmap, mode "r"), and an array view
per tensor into the mapping, as a numpy user maps a weight file. Nothing is read until the views
are used: `ready` once the views exist, `done` once the checksum has touched every byte of
every view (the page faults and the reads from disk happen there). WLF and GGUF files are
mapped and touched whole, and sent unverified (no checksum). Needs python3-numpy and
python3-xxhash.

    python3 numpy_memmap.py MODEL
"""
import lbpeer

np = lbpeer.need("numpy", "python3-numpy")
lbpeer.need("xxhash", "python3-xxhash")


def view(maps, t):
    dtype, shape = lbpeer.numpy_view(t)
    return maps[t.shard][t.offset:t.offset + t.size].view(dtype).reshape(shape)


def load(path, clock):
    model = lbpeer.read_model(path)
    maps = [np.memmap(f, dtype=np.uint8, mode="r") for f in model.files]
    views = maps if model.tensors is None else [view(maps, t) for t in model.tensors]
    lbpeer.use(clock, views, verified=model.tensors is not None)


if __name__ == "__main__":
    lbpeer.main(load)
