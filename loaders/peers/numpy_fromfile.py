"""numpy.fromfile: each tensor read into an array of its own, the way a numpy user reads a
weight file (seek to the tensor, np.fromfile its elements). `ready` once every tensor is read,
`done` once the checksum has read them back. WLF and GGUF files are read whole into one array
each and sent unverified (no checksum). Needs python3-numpy and python3-xxhash.

    python3 numpy_fromfile.py MODEL
"""
import lbpeer

np = lbpeer.need("numpy", "python3-numpy")
lbpeer.need("xxhash", "python3-xxhash")


def read_tensors(model):
    files = [open(f, "rb") for f in model.files]
    arrays = []
    for t in model.tensors:
        dtype, shape = lbpeer.numpy_view(t)
        f = files[t.shard]
        f.seek(t.offset)
        a = np.fromfile(f, dtype=dtype, count=t.size // np.dtype(dtype).itemsize)
        if a.nbytes != t.size:
            raise lbpeer.BadModel(f"{f.name}: tensor '{t.name}': read {a.nbytes} of {t.size} bytes")
        arrays.append(a.reshape(shape))
    for f in files:
        f.close()
    return arrays


def load(path, clock):
    model = lbpeer.read_model(path)
    if model.tensors is None:
        arrays = [np.fromfile(f, dtype=np.uint8) for f in model.files]
    else:
        arrays = read_tensors(model)
    lbpeer.use(clock, arrays, verified=model.tensors is not None)


if __name__ == "__main__":
    lbpeer.main(load)
