"""A model of a load from the machine's primitives, fitted on nothing: its only inputs are the
figures the probe measured on the machine (env.json `probe.ceilings`, or a machine described
by its figures: analysis/models/machine_figures.py) and what the runs counted (their bytes and first
touches). Nothing in it is tuned to make a row agree; the report shows where it does not.

    time = bytes / (GB/s of the slowest stage the bytes pass)
         + first touches x the probe's cost of one
         + bytes / memcpy GB/s, where the consumer reads the bytes after the load

The stages a row's bytes pass follow from what the strategy declares of itself, its flags (each
strategy's `.flags` in loaders/, recorded in every run's `strategy_flags`), and from the run's
condition:

- network, where the run read through a server (analysis/remote.is_remote): the ceiling of
  the round's shaped link (`link_ceiling` records: iperf3 over it);
- device, for a cold local run, or a warm one that still read the file's bytes from storage
  (O_DIRECT: its median read_bytes at least half the file): `device_limit`, the probe's
  fastest read recipe;
- page cache, for a warm run that copies out of the page cache (no `maps-file`): `warm_read`,
  read() from the page cache;
- memory fill, for `allocates` or `shared-segment` (the bytes are written into memory of its
  own): `memory_fill`;
- host to GPU, for `device` (the bytes go on into GPU memory): `h2d_pinned`;
- consumer, where the consumer reads every byte (`use.consume` checksum, the default) and the
  strategy is not `eager`, so that the consumer reads as the load goes on: `memcpy`.

An `eager` strategy returns from Load with every byte in memory, and only then does the
consumer read them: its pass is added, not a stage (bytes / `memcpy` GB/s).

First touches, counted in the run and priced by the probe:
- `maps-file`: the load's minor faults, each a fault on a cached file's mapping
  (`file_minor_fault` µs per fault: it maps a whole folio and the fault-around window);
- `allocates` or `shared-segment`: where the runs got huge pages (median anon_huge_bytes at
  least half the bytes, as analysis/stats/touch.py decides), anon_huge_bytes / 2 MiB huge pages at
  `thp_fault` µs each, else the load's minor faults at `anon_4k_fault` µs each. Predicted for a
  machine whose transparent huge pages are `never`, those huge pages are 512 pages of 4 KiB each,
  and a strategy given `buffer=thp` (owned's default) is unsupported there, as it reports itself.

Requests, on a storage whose probe measured the reads per second it sustains (a storage the
tool made, env.json `storages[i].probe.iops`; analysis/models/machine_figures.py): the device
stage's rate is the lesser of its bytes per second (`device_limit`) and those reads per second
times the request size the strategy issues (`request_bytes`), known before the run from its
params and the storage's block device (env.json `storages[i].loop`: `read_ahead_kb`,
`max_sectors_kb`; the data folder's `storage` for a run on it as it is), never from the run's
own counters:
- O_DIRECT (flags with `direct-io` and no `direct=off`) and io_uring: one request per read of
  the strategy's size (its `chunk`, else `window`, `block` or `block_bytes`), split at the
  device's largest request: min(read size, max_sectors_kb), and, into a destination of 4 KiB
  pages (any `buffer` but thp and hugetlb), at one segment per page: max_segments × 4 KiB (a
  loop device's 128 segments split such reads at 512 KiB);
- any other (buffered reads, mappings): the read-ahead window, split the same way:
  min(read_ahead_kb, max_sectors_kb).
The run's measured `device_request_bytes` is set beside it, to check the rule, never to price
the row. Without the reads-per-second figure (every machine's own probe) the stage is priced as
before, by bytes per second alone.

Left out, and so in the error: threads (the stages and touches are summed as if on one core,
while a strategy's threads may overlap them), queue depth (the device's figure is the probe's
best recipe), and several readers (the model is one reader's: rows of several
readers get no prediction). A row whose strategy declares no flags (an exec command) gets none:
nothing says which stages its bytes pass. A row that needs a figure its machine lacks gets
none, and `missing` names the figure.
"""

from __future__ import annotations

import math

from analysis.core.results import ALLOCATES, DEVICE, MAPS_FILE, has_flag
from analysis.stats import touch
from analysis.stats.touch import SMALL_PAGE

EAGER = "eager"
SHARED_SEGMENT = "shared-segment"
DIRECT_IO = "direct-io"
# The figures a prediction may read: name -> what the probe calls it (probe.ceilings.KEY's
# FIELD), as machine_figures reads them from an env.json.
FIGURES = {
    "device_gb_per_s": ("device_limit", "gb_per_s"),
    "page_cache_gb_per_s": ("warm_read", "gb_per_s"),
    "memcpy_gb_per_s": ("memcpy", "gb_per_s"),
    "fill_gb_per_s": ("memory_fill", "gb_per_s"),
    "fault_4k_us": ("anon_4k_fault", "median_us"),
    "fault_2m_us": ("thp_fault", "median_us"),
    "file_fault_us": ("file_minor_fault", "median_us"),
    "h2d_gb_per_s": ("h2d_pinned", "gb_per_s"),
}
# The figures of a storage's requests (request_bytes and the device stage): the most reads per
# second the storage's probe sustained, and its block device's read-ahead window and largest
# request, in KiB.
REQUEST_FIGURES = ("device_iops", "read_ahead_kb", "max_sectors_kb", "max_segments")
# Destinations in huge pages (params `buffer`): an O_DIRECT read into them is not split at the
# device's segments, one per 4 KiB page of any other buffer.
HUGE_BUFFERS = ("thp", "hugetlb")
PAGE = 4096
# Every figure a machine may have: what --predict accepts and machines.json's `figures` holds.
ALL_FIGURES = (*FIGURES, *REQUEST_FIGURES)
KIB = 1024
# The params that name a strategy's read size (bytes), the first found: its chunk, a ring's
# window, a block, the ceiling read's block.
READ_SIZE = ("chunk", "window", "block", "block_bytes")
# A consumer that reads every byte (use.consume); the others read a part or none.
READS_ALL = ("checksum", None)


def flags_of(row) -> list[str]:
    flags = row.get("strategy_flags")
    return flags.split(",") if isinstance(flags, str) and flags else []


def copies(row) -> bool:
    """Whether the row's bytes are written into memory of the strategy's own."""
    return has_flag(row.get("strategy_flags"), ALLOCATES) or \
        has_flag(row.get("strategy_flags"), SHARED_SEGMENT)


def reads_storage(row) -> bool:
    """Whether the row's bytes came from storage: cold, or warm with O_DIRECT (its median
    read_bytes at least half the file)."""
    if row.get("cache") != "warm":
        return True
    read, size = row.get("read_bytes"), row.get("bytes")
    return has_flag(row.get("strategy_flags"), DIRECT_IO) and \
        positive(read) is not None and positive(size) is not None and read >= size / 2


def stages(row) -> list[tuple[str, str]]:
    """The stages the row's bytes pass, as (stage, the figure that prices it): the table of
    the module's docstring. A figure "link:NAME" is the ceiling of the row's link NAME."""
    out = []
    if row.get("remote"):
        out.append(("network", f"link:{row.get('link') or ''}"))
    elif reads_storage(row):
        out.append(("device", "device_gb_per_s"))
    elif not has_flag(row.get("strategy_flags"), MAPS_FILE):
        out.append(("page cache", "page_cache_gb_per_s"))
    if copies(row):
        out.append(("memory fill", "fill_gb_per_s"))
    if has_flag(row.get("strategy_flags"), DEVICE):
        out.append(("host to GPU", "h2d_gb_per_s"))
    if row.get("consume") in READS_ALL and EAGER not in flags_of(row):
        out.append(("consumer", "memcpy_gb_per_s"))
    return out


def in_chunks(row) -> bool:
    """Whether the strategy's reads reach the device as it issues them, one request per read
    (split at the device's largest): O_DIRECT (flags with `direct-io`, its params not
    `direct=off`) or io_uring; else the page cache's read-ahead issues them."""
    spec = str(row.get("strategy_spec") or row.get("strategy") or "")
    params = row.get("params")
    direct = params.get("direct") if isinstance(params, dict) else None
    return spec.split(":")[0] == "io_uring" or (
        has_flag(row.get("strategy_flags"), DIRECT_IO) and direct != "off")


def read_size(params) -> float | None:
    """The strategy's read size from its params (READ_SIZE, the first that is a number above
    0), None where none names one."""
    params = params if isinstance(params, dict) else {}
    return next((positive(params[k]) for k in READ_SIZE if positive(params.get(k))), None)


def request_bytes(row, figures: dict) -> float | None:
    """The bytes of one read request the row's strategy sends the device (the module's
    docstring), from the row's flags and `params` (its read size, `direct`) and the storage's
    read-ahead window and largest request (`figures`); None where a figure it needs is not
    known."""
    largest = positive(figures.get("max_sectors_kb"))
    cap = largest * KIB if largest else math.inf
    if in_chunks(row):
        size = read_size(row.get("params")) or math.inf
        params = row.get("params") if isinstance(row.get("params"), dict) else {}
        segments = positive(figures.get("max_segments"))
        if segments and params.get("buffer") not in HUGE_BUFFERS:
            cap = min(cap, segments * PAGE)  # one segment per 4 KiB page of the destination
    else:
        window = positive(figures.get("read_ahead_kb"))
        size = window * KIB if window else math.inf
    value = min(size, cap)
    return value if math.isfinite(value) else None


def device_rate(row, figures: dict) -> tuple[float | None, float | None, str]:
    """The device stage's GB/s for the row: (rate, request bytes, bound): the lesser of the
    storage's bytes per second and its reads per second (`device_iops`) times the row's
    request bytes, `bound` "requests" where those bind, else "bytes"; the bytes' figure alone
    (bound "") where the reads per second or the request size are not known."""
    rate = positive(figures.get("device_gb_per_s"))
    size = request_bytes(row, figures)
    iops = positive(figures.get("device_iops"))
    if rate is None or iops is None or size is None:
        return rate, size, ""
    by_requests = iops * size / 1e9
    return (by_requests, size, "requests") if by_requests < rate else (rate, size, "bytes")


def touches(row, thp: str | None) -> list[tuple[str, float, str]]:
    """The first touches the row pays, as (kind, count, the figure that prices one); `thp`: the
    predicted machine's transparent huge pages setting (`never` turns huge pages into 4 KiB
    ones)."""
    faults = positive(row.get("minor_faults"))
    if has_flag(row.get("strategy_flags"), MAPS_FILE):
        return [("file mapping", faults, "file_fault_us")] if faults else []
    if not copies(row) or has_flag(row.get("strategy_flags"), DEVICE):
        return []
    huge_bytes, size = positive(row.get("anon_huge_bytes")) or 0.0, positive(row.get("bytes"))
    count, huge = touch.pages(faults, huge_bytes, size or math.inf)
    if huge:
        if thp == "never":
            return [("4 KiB", huge_bytes / SMALL_PAGE, "fault_4k_us")]
        return [("2 MiB", count, "fault_2m_us")]
    return [("4 KiB", faults, "fault_4k_us")] if faults else []


def predict(row, figures: dict, links: dict, thp: str | None) -> dict:
    """The model's time for the row on a machine of `figures` (FIGURES' names to numbers or
    None), `links` (link name to its ceiling's GB/s) and `thp`: predicted_s, the slowest stage
    and its GB/s, stream_s (bytes over it), touch_s, consume_s, and `missing` (the figures it
    lacked, "" where none; then predicted_s is NaN), and for a row whose bytes pass the device
    the request bytes its strategy sends it (`request_bytes`, NaN where unknown) and what
    bound the device's rate (`device_bound`: "requests", "bytes", or "" where the machine has
    no reads-per-second figure: device_rate). `why` names a row the model cannot describe at
    all."""
    none = {"predicted_s": math.nan, "slowest": "", "slowest_gb_per_s": math.nan,
            "stream_s": math.nan, "touch_s": math.nan, "consume_s": math.nan, "missing": "",
            "request_bytes": math.nan, "device_bound": ""}
    size = positive(row.get("bytes"))
    if not flags_of(row):
        return {**none, "why": "no stages: the strategy declares no flags (an exec command)"}
    if (row.get("procs") or 1) > 1:
        return {**none, "why": "several readers: the model is one reader's"}
    if not size:
        return {**none, "why": "the bytes are not recorded"}
    if thp == "never" and row.get("buffer") == "thp":
        return {**none, "why": "unsupported there: buffer=thp takes transparent huge pages, "
                               "`never` on that machine"}

    def figure(name):
        return positive(links.get(name[5:])) if name.startswith("link:") else \
            positive(figures.get(name))

    device, request, bound = device_rate(row, figures)
    rated = [(stage, name, device if name == "device_gb_per_s" else figure(name))
             for stage, name in stages(row)]
    if any(stage == "device" for stage, _, _ in rated):
        none.update(request_bytes=request if request else math.nan)
    else:
        bound = ""
    priced = [(kind, count, name, figure(name)) for kind, count, name in touches(row, thp)]
    missing = [name for _, name, value in rated if value is None] + \
        [name for _, count, name, value in priced if value is None]
    if missing:
        return {**none, "why": "", "missing": ", ".join(dict.fromkeys(missing))}
    # No stage at all: an eager mapping of a cached file, whose bytes move only when the
    # consumer reads them after the load.
    stage, _, rate = min(rated, key=lambda s: s[2]) if rated else ("", "", math.inf)
    stream_s = size / rate / 1e9
    touch_s = sum(count * us / 1e6 for _, count, _, us in priced)
    memcpy = figure("memcpy_gb_per_s")
    eager_pass = row.get("consume") in READS_ALL and EAGER in flags_of(row)
    if eager_pass and memcpy is None:
        return {**none, "why": "", "missing": "memcpy_gb_per_s"}
    consume_s = size / memcpy / 1e9 if eager_pass else 0.0
    return {"predicted_s": stream_s + touch_s + consume_s, "slowest": stage,
            "slowest_gb_per_s": rate, "stream_s": stream_s, "touch_s": touch_s,
            "consume_s": consume_s, "missing": "", "why": "",
            "request_bytes": none["request_bytes"], "device_bound": bound}


def family(row) -> str:
    """The row's family, by how its bytes travel: what the model's error is summed over."""
    flags = row.get("strategy_flags")
    if not flags_of(row):
        return "exec command"
    if has_flag(flags, DEVICE):
        return "into GPU memory"
    if row.get("remote"):
        return "over the network"
    if has_flag(flags, MAPS_FILE):
        return "maps the file"
    if has_flag(flags, SHARED_SEGMENT):
        return "shared segment"
    return "copies, O_DIRECT" if has_flag(flags, DIRECT_IO) else "copies"


def positive(value) -> float | None:
    """A finite number above 0 as a float; None for anything else (a missing figure)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value) and value > 0
    return float(value) if ok else None
