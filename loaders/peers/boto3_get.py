"""boto3 downloading a model from S3 into memory, the way a Python user fetches weights from a
bucket: `client.download_fileobj(bucket, key, io.BytesIO(), Config=TransferConfig(...))`, whose
transfer manager makes ranged GETs of `--chunk` bytes on `--concurrency` threads for an object
of at least `--threshold` bytes (one GET below it), writing each part at its offset. `ready`
once every object is in memory, `done` once the checksum has read every tensor's bytes there.
A safetensors or WLF file, or an index (`.../model.safetensors.index.json`) whose shards are
under the same prefix, fetched one after another in sorted order. Needs python3-boto3 and
python3-xxhash.

    python3 boto3_get.py [--chunk 8MiB] [--threshold 8MiB] [--concurrency 10] s3://BUCKET/KEY

The client is botocore's: credentials from the environment, the endpoint from
AWS_ENDPOINT_URL when set (botocore 1.29 does not read it itself), path-style addressing
(`s3={"addressing_style": "path"}`: the bucket in the path, as a local server such as s3rver
needs). It is made before the clock starts, beside the imports: botocore reading its service
model is a fixed cost of the process, not of the load (it is inside the whole command's time).
"""
import argparse
import io
import os
import posixpath
import re

import lbpeer

boto3 = lbpeer.need("boto3", "python3-boto3")
lbpeer.need("xxhash", "python3-xxhash")
from boto3.s3.transfer import TransferConfig  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.exceptions import BotoCoreError, ClientError  # noqa: E402

UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
         "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def size(text):
    m = re.fullmatch(r"(\d+)\s*([a-zA-Z]*)", text.strip())
    if not m or m.group(2).lower() not in UNITS or int(m.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (8MiB, 65536)")
    return int(m.group(1)) * UNITS[m.group(2).lower()]


def s3_name(text):
    m = re.fullmatch(r"s3://([^/]+)/(.+)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"'{text}' is not s3://BUCKET/KEY")
    return m.group(1), m.group(2)


def parse_args():
    p = argparse.ArgumentParser(prog="boto3_get.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--chunk", type=size, default=8 << 20,
                   help="multipart_chunksize: the bytes of one ranged GET (default 8MiB)")
    p.add_argument("--threshold", type=size, default=8 << 20,
                   help="multipart_threshold: objects this large or larger are fetched in "
                        "parts (default 8MiB)")
    p.add_argument("--concurrency", type=int, default=10,
                   help="max_concurrency: threads fetching parts (default 10)")
    p.add_argument("model", type=s3_name, metavar="s3://BUCKET/KEY")
    a = p.parse_args()
    if a.concurrency < 1:
        p.error("--concurrency must be at least 1")
    return a


def client():
    return boto3.session.Session().client(
        "s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None,
        config=Config(s3={"addressing_style": "path"}))


def fetch(s3, bucket, key, config):
    """The object's bytes, in a BytesIO (its buffer, no copy)."""
    out = io.BytesIO()
    try:
        s3.download_fileobj(bucket, key, out, Config=config)
    except ClientError as e:
        err = e.response.get("Error", {})
        code = err.get("Code", "?")
        what = {"404": "no such object", "NoSuchKey": "no such object",
                "NoSuchBucket": "no such bucket", "403": "access denied"}.get(code, code)
        raise lbpeer.BadModel(f"s3://{bucket}/{key}: {what} "
                              f"({err.get('Message') or e})") from None
    except BotoCoreError as e:
        raise lbpeer.BadModel(f"s3://{bucket}/{key}: {e}") from None
    return out.getbuffer()


def load(args, s3, config, clock):
    bucket, key = args.model
    first = fetch(s3, bucket, key, config)
    if lbpeer.is_index(first[:4096]):
        where = f"s3://{bucket}/{key}"
        prefix = posixpath.dirname(key)
        keys = [posixpath.join(prefix, n) for n in lbpeer.index_shards(bytes(first), where)]
        first.release()
        bufs = [fetch(s3, bucket, k, config) for k in keys]
    else:
        keys, bufs = [key], [first]
    model = lbpeer.model_from_bytes(bufs, [f"s3://{bucket}/{k}" for k in keys])
    lbpeer.use(clock, lbpeer.tensor_views(bufs, model.tensors))


if __name__ == "__main__":
    args = parse_args()
    config = TransferConfig(multipart_threshold=args.threshold, multipart_chunksize=args.chunk,
                            max_concurrency=args.concurrency)
    s3 = client()
    lbpeer.guarded(load, args, s3, config, lbpeer.Clock())
