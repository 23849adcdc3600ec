"""PyTorch 1.13, tensors over a mapped file: the file mapped by torch itself
(torch.UntypedStorage.from_file(path, shared=False, size): a private, copy-on-write mapping of
the whole file), and per tensor a uint8 tensor over the storage's slice of its bytes, viewed as
its dtype and reshaped, as the pure-Python safe_open of the safetensors authors does it for
torch (torch.asarray(storage[start:stop], dtype=torch.uint8).view(dtype).reshape(shape)); no
copy. No byte is read until used: `ready` once the tensors exist, `done` once the checksum has
read every byte through the tensors. safetensors only (a WLF or GGUF model is `unsupported`).
Needs python3-torch (`make peers`) and python3-xxhash.

    python3 torch_mmap.py MODEL
"""
import os

import lbpeer

torch = lbpeer.need("torch", "python3-torch", "make peers")
lbpeer.need("xxhash", "python3-xxhash")


def tensor(storages, t):
    raw = torch.asarray(storages[t.shard][t.offset:t.offset + t.size], dtype=torch.uint8)
    dtype = lbpeer.torch_dtype(torch, t)
    return raw.view(dtype).reshape(t.shape) if dtype is not None else raw


def load(path, clock):
    model = lbpeer.read_model(path)
    lbpeer.need_table(model, "torch_mmap")
    storages = [torch.UntypedStorage.from_file(f, False, os.path.getsize(f))
                for f in model.files]
    tensors = [tensor(storages, t) for t in model.tensors]
    lbpeer.use(clock, (lbpeer.torch_bytes(torch, x) for x in tensors))


if __name__ == "__main__":
    lbpeer.main(load)
