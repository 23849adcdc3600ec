"""PyTorch 1.13, tensors read into: per tensor a fresh tensor of its dtype and shape
(torch.empty), and the file's bytes read straight into its memory (readinto on an unbuffered
file, through the tensor's numpy view), as a loader that owns its tensors reads a weight file.
`ready` once every tensor is read, `done` once the checksum has read them back. safetensors
only (a WLF or GGUF model is `unsupported`). Needs python3-torch (`make peers`) and
python3-xxhash.

    python3 torch_read.py MODEL
"""
import lbpeer

torch = lbpeer.need("torch", "python3-torch", "make peers")
lbpeer.need("xxhash", "python3-xxhash")


def read_into(f, offset, buf):
    """Reads len(buf) bytes at `offset` into buf (readinto may return fewer: loops)."""
    f.seek(offset)
    view, got = memoryview(buf).cast("B"), 0
    while got < len(view):
        n = f.readinto(view[got:])
        if not n:
            raise lbpeer.BadModel(f"{f.name}: ends at {offset + got}, inside a tensor")
        got += n


def tensor(files, t):
    dtype = lbpeer.torch_dtype(torch, t)
    x = torch.empty(t.shape, dtype=dtype) if dtype is not None else \
        torch.empty(t.size, dtype=torch.uint8)
    read_into(files[t.shard], t.offset, lbpeer.torch_bytes(torch, x))
    return x


def load(path, clock):
    model = lbpeer.read_model(path)
    lbpeer.need_table(model, "torch_read")
    files = [open(f, "rb", buffering=0) for f in model.files]
    tensors = [tensor(files, t) for t in model.tensors]
    for f in files:
        f.close()
    lbpeer.use(clock, (lbpeer.torch_bytes(torch, x) for x in tensors))


if __name__ == "__main__":
    lbpeer.main(load)
