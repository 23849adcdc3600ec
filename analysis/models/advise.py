"""What `loadbench advise FILE` predicts before it measures: every strategy `loadbench list`
offers for a local file, with the options that change the model's figures, ranked per cache
state by the load model of `make machines` (analysis/models/load.py, fitted on nothing) from a
probe of the file's own device, each with its peak memory, which the load model has no term
for and which is derived here from the strategy's kind (`memory`).

The machine (`machine`): a `loadbench probe`'s figures (env.json `probe.ceilings`: the device's
fastest read recipe, a read() from the page cache, memcpy, the memory fill, the first touches
of 4 KiB and 2 MiB pages and a fault on a cached file's mapping), its device figure only where
the probe's scratch file was on the file's device; with a `loadbench probe --storage here` of
the same folder, the reads per second the device sustains (`iops`), so that the device stage
is request-aware as on a storage the tool made (models/load.device_rate), with the data
folder's read-ahead window and largest request (env.json `storage`).

The counts. The load model prices what a run counted; before any run they come from the
strategy and the file:
- a copy (`allocates`, `shared-segment`): a first touch per 4 KiB page of the file's bytes, or
  per 2 MiB page where its destination is `buffer=thp` (owned's default; `never` THP makes
  such a strategy unsupported, as it reports itself);
- a mapping (`maps-file`): the file's 4 KiB pages over the pages one fault mapped in the
  probe's file_minor_fault (`pages_per_fault`; one a page without it);
- warm, a strategy that opens with O_DIRECT whatever the cache holds (flag `direct-io`, its
  `direct` option neither `off` nor `auto`, or no such option) reads the file from the device;
  `direct=auto` (owned) reads the cached file, as `direct=off` does.

Candidates (`candidates`): each supported strategy for a local file (not remote-only, not into
GPU memory) at its defaults, and each value of the options the model tells apart: `buffer`
malloc or thp (the destination's THP off or on), `direct` (O_DIRECT or the page cache); where
the device's requests bind (its reads per second times a candidate's request below its bytes
per second, `requests`), `chunk` and `window` of 256 KiB to 16 MiB for the strategies whose
reads reach the device as issued. What the model cannot see (threads, queue depth, a
mapping's advice beyond the strategies that name it) is left at its default: the ranking ties
what it cannot tell apart (predictions within TIE of each other share a rank), and the
measurement settles it.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.core.results import ALLOCATES, DEVICE, MAPS_FILE, has_flag
from analysis.core.units import parse_size, size_text
from analysis.models import load as model, machine_figures as mf
from analysis.stats.touch import HUGE_PAGE, SMALL_PAGE

CACHES = ("cold", "warm")
BUFFERS = ("malloc", "thp")
# The read sizes tried where the device's requests bind, and the options that name one.
READ_SIZES = ("256KiB", "1MiB", "4MiB", "16MiB")
READ_SIZE_OPTIONS = ("chunk", "window")
REMOTE, LOCAL_OR_REMOTE, STREAMS = "remote", "local-or-remote", "streams"
TIE = 0.01  # predictions within 1% of each other share a rank: the model does not part them
BASELINE = "fread"
# A tensor's layer: the name up to its first number (blk.7.attn_q.weight, model.layers.7.mlp...).
LAYER = re.compile(r"^(.*?\.\d+)\.")
WHY = {"buffer=thp": "THP on: first touches of 2 MiB pages",
       "buffer=malloc": "THP off: first touches of 4 KiB pages",
       "direct=on": "O_DIRECT always (warm too: the device again)",
       "direct=off": "through the page cache",
       "direct=auto": "O_DIRECT where the file is not cached"}


@dataclass(frozen=True)
class FileFacts:
    """The file as `loadbench inspect --json` describes it, and the device it is on."""
    path: str
    format: str
    file_bytes: int
    tensor_bytes: int
    tensors: int
    largest_layer_bytes: int
    device: str | None  # "major:minor", as the probe's scratch.device


def file_facts(path: str, inspected: dict) -> FileFacts:
    """FileFacts of `path` from inspect's JSON (`inspected`)."""
    tensors = [t for t in inspected.get("tensors") or [] if isinstance(t, dict)]
    layers: dict[str, int] = {}
    for i, t in enumerate(tensors):
        m = LAYER.match(str(t.get("name", "")))
        key = m.group(1) if m else f"#{i}"  # a tensor of no layer is loaded alone
        layers[key] = layers.get(key, 0) + int(t.get("size") or 0)
    try:
        st = os.stat(path)
        device = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    except OSError:
        device = None
    return FileFacts(path, str(inspected.get("format", "?")), int(inspected.get("file_bytes", 0)),
                     int(inspected.get("tensor_bytes", 0)), len(tensors),
                     max(layers.values(), default=0), device)


@dataclass
class Machine:
    """The model's inputs: `figures` (machine_figures.Figures, with the data folder's request
    figures), the pages one fault of a file mapping maps (the probe's), where each figure came
    from (`sources`: the env.json paths read)."""
    figures: mf.Figures
    pages_per_fault: float | None
    sources: list[str]


def _probe_device(env: dict) -> str | None:
    device = mf.dig(env, "probe.scratch.device")
    return device if isinstance(device, str) else None


def machine(envs: dict[str, dict], device: str | None) -> Machine:
    """The machine of the probes `envs` (path -> env.json): the machine probe's figures
    (kind `full`), the device's reads per second from a storage probe (kind `storage`), each
    device figure only where its scratch file was on `device` (the file's)."""
    full = [(p, e) for p, e in envs.items() if mf.dig(e, "probe.kind") != "storage"]
    storage = [(p, e) for p, e in envs.items() if mf.dig(e, "probe.kind") == "storage"]
    path, env = full[0] if full else ("", {})
    figures = mf.from_storage(env, "", "this machine")
    if full and device and _probe_device(env) not in (None, device):
        figures.figures["device_gb_per_s"] = None
        figures.lacks = (f"{path}: the probe measured device {_probe_device(env)}, the file is on "
                         f"{device}: cold loads are not predicted")
    for _, s in storage:
        if device and _probe_device(s) not in (None, device):
            continue
        figures.figures["device_iops"] = model.positive(mf.dig(s, "probe.iops"))
        if figures.figures.get("device_gb_per_s") is None:
            figures.figures["device_gb_per_s"] = model.positive(
                mf.dig(s, "probe.ceilings.device_limit.gb_per_s"))
            figures.lacks = "" if figures.figures["device_gb_per_s"] else figures.lacks
    if not full:
        figures.lacks = "no machine probe: memory and fault figures unknown"
    pages = model.positive(mf.dig(env, "probe.ceilings.file_minor_fault.pages_per_fault"))
    return Machine(figures, pages, list(envs))


@dataclass(frozen=True)
class Candidate:
    """A strategy with options, as `run --strategies` takes it (`spec`): `change` is the one
    option set apart from its defaults ("" for none), `why` what it does in the model."""
    spec: str
    name: str
    flags: str
    params: dict
    change: str = ""
    why: str = "its defaults"


def local(strategy: dict) -> bool:
    """Whether a strategy of `list --json` loads a local file into host memory here."""
    flags = str(strategy.get("flags") or "")
    remote_only = has_flag(flags, REMOTE) and not has_flag(flags, LOCAL_OR_REMOTE)
    return bool(strategy.get("supported")) and not remote_only and not has_flag(flags, DEVICE)


def _value(option: dict):
    text = str(option.get("default", ""))
    if option.get("kind") == "size":
        return int(parse_size(text))
    return int(text) if str(option.get("kind", "")).startswith("integer") and \
        text.isdigit() else text


def _kinds(option: dict) -> list[str]:
    return str(option.get("kind", "")).split("|")


def candidates(strategies: list[dict], thp: str | None, bound: bool = False) -> list[Candidate]:
    """The strategies of `list --json` that load a local file, at their defaults and with
    each option value the model tells apart (the module's docstring); read sizes only where
    the device's requests bind (`bound`)."""
    out = []
    for s in (s for s in strategies if local(s)):
        options = {o["name"]: o for o in s.get("options") or [] if isinstance(o, dict)}
        params = {k: _value(o) for k, o in options.items()}
        base = Candidate(s["name"], s["name"], str(s.get("flags") or ""), params)
        out.append(base)
        changes = []
        if "buffer" in options:
            changes += [("buffer", b) for b in BUFFERS if b in _kinds(options["buffer"])
                        and b != params["buffer"] and not (b == "thp" and thp == "never")]
        if "direct" in options:
            changes += [("direct", d) for d in _kinds(options["direct"]) if d != params["direct"]]
        if bound and model.in_chunks({"strategy_spec": base.spec, "strategy_flags": base.flags,
                                      "params": params}):
            changes += [(k, v) for k in READ_SIZE_OPTIONS if k in options for v in READ_SIZES
                        if parse_size(v) != params[k]]
        for key, value in changes:
            change = f"{key}={value}"
            given = int(parse_size(value)) if key in READ_SIZE_OPTIONS else value
            out.append(Candidate(f"{base.name}:{change}", base.name, base.flags,
                                 {**params, key: given}, change,
                                 WHY.get(change, f"reads of {value}, one request each")))
    return out


def direct_always(c: Candidate) -> bool:
    """Whether the candidate reads with O_DIRECT even where the file is cached."""
    return has_flag(c.flags, model.DIRECT_IO) and c.params.get("direct", "on") not in ("off",
                                                                                      "auto")


def direct_cold(c: Candidate) -> bool:
    """Whether the candidate reads an uncached file with O_DIRECT (nothing left cached)."""
    return has_flag(c.flags, model.DIRECT_IO) and c.params.get("direct", "on") != "off"


def row(c: Candidate, cache: str, facts: FileFacts, m: Machine) -> dict:
    """The row model.predict reads, with the counts derived before any run (the module's
    docstring)."""
    size = float(facts.file_bytes)
    thp = c.params.get("buffer") == "thp"
    if has_flag(c.flags, MAPS_FILE):
        faults = math.ceil(size / SMALL_PAGE / (m.pages_per_fault or 1.0))
    else:
        faults = size / (HUGE_PAGE if thp else SMALL_PAGE)
    return {"strategy": c.name, "strategy_spec": c.spec, "strategy_flags": c.flags,
            "params": c.params, "buffer": c.params.get("buffer"), "cache": cache, "bytes": size,
            "procs": 1, "remote": False, "consume": "checksum", "minor_faults": faults,
            "anon_huge_bytes": size if thp else 0.0,
            "read_bytes": size if cache == "cold" or direct_always(c) else 0.0}


def memory(c: Candidate, cache: str, facts: FileFacts) -> dict:
    """The load's peak memory by the strategy's kind, the load model having no term for it:
    `rss_bytes`, the load's own resident memory (a copy of the tensors, a mapping's pages, one
    layer of a streaming mapping, a shared segment); `cache_bytes`, the file's pages in the
    page cache after it (none cold where it reads with O_DIRECT; warm, the file was cached
    before the load); `peak_bytes`, both (a mapping's pages are the page cache's, counted
    once); `memory_how`, which rule."""
    tensors, file_bytes = float(facts.tensor_bytes), float(facts.file_bytes)
    cached = file_bytes if cache == "warm" or not direct_cold(c) else 0.0
    if has_flag(c.flags, MAPS_FILE):
        streams = has_flag(c.flags, STREAMS)
        rss = float(facts.largest_layer_bytes) if streams else tensors
        how = "one layer mapped at a time (the largest)" if streams else \
            "the file's pages mapped, the page cache's"
        return {"rss_bytes": rss, "cache_bytes": file_bytes, "peak_bytes": file_bytes,
                "memory_how": how}
    how = ("a shared segment of the tensors" if has_flag(c.flags, model.SHARED_SEGMENT) else
           "an anonymous copy of the tensors" if has_flag(c.flags, ALLOCATES) else "unknown")
    how += ", the file cached" if cached else ", nothing cached (O_DIRECT)"
    return {"rss_bytes": tensors, "cache_bytes": cached, "peak_bytes": tensors + cached,
            "memory_how": how}


def _tie_key(x: float) -> float:
    """Predictions within TIE of each other as one value (log buckets of TIE's width)."""
    return math.floor(math.log(x) / math.log1p(TIE)) if x > 0 and math.isfinite(x) else math.inf


def predict(cands: list[Candidate], facts: FileFacts, m: Machine,
            caches=CACHES) -> pd.DataFrame:
    """One row per cache state and candidate: model.predict's columns, the memory's, `rank`
    per cache state (ties within TIE share one), sorted fastest first (unpredicted last;
    within a tie, defaults first, then the smaller RSS, then by name)."""
    rows = []
    for cache in caches:
        for c in cands:
            r = row(c, cache, facts, m)
            p = model.predict(r, m.figures.figures, {}, m.figures.thp)
            rows.append({"cache": cache, "spec": c.spec, "strategy": c.name,
                         "change": c.change, "option_why": c.why, "family": model.family(r),
                         "flags": c.flags, **p, **memory(c, cache, facts)})
    t = pd.DataFrame(rows)
    t["tie_key"] = t["predicted_s"].map(_tie_key)
    t["default"] = t["change"].eq("")
    t = t.sort_values(["cache", "tie_key", "default", "rss_bytes", "spec"],
                      ascending=[True, True, False, True, True], kind="stable")
    ranked = t["predicted_s"].notna()
    t["rank"] = np.nan
    t.loc[ranked, "rank"] = t[ranked].groupby("cache")["tie_key"].rank(method="min")
    return t.reset_index(drop=True)


def pick(t: pd.DataFrame, top: int) -> list[str]:
    """The `top` candidates to measure: by their predicted time over the fastest's in each
    cache state asked (the mean of the logs), distinct strategies, the baseline aside (it is
    always measured); within a tie (TIE), defaults first, then the smaller RSS, then by
    name."""
    ok = t[t["predicted_s"].notna()]
    caches = t["cache"].nunique()
    ok = ok.assign(score=np.log(ok["predicted_s"] / ok.groupby("cache")["predicted_s"]
                                .transform("min")))
    s = ok.groupby("spec", sort=False).agg(score=("score", "mean"), n=("score", "size"),
                                           strategy=("strategy", "first"),
                                           default=("default", "first"),
                                           rss=("rss_bytes", "mean")).reset_index()
    s = s[(s["n"] == caches) & (s["spec"] != BASELINE)]
    s = s.assign(key=(s["score"] / math.log1p(TIE)).round())
    s = s.sort_values(["key", "default", "rss", "spec"], ascending=[True, False, True, True],
                      kind="stable")
    return list(s.drop_duplicates("strategy")["spec"][:top])


def requests(t: pd.DataFrame, m: Machine) -> dict:
    """Whether the device's requests bind any candidate, cold (models/load.device_rate), and
    what would unbind the buffered ones: `bound` (the specs), `text` (in words), `window_kb`
    (the read-ahead window at which reads per second times it reach the device's bytes per
    second; None where the reads per second are unknown)."""
    f = m.figures.figures
    iops, rate = f.get("device_iops"), f.get("device_gb_per_s")
    ahead, largest = f.get("read_ahead_kb"), f.get("max_sectors_kb")
    cold = t[(t["cache"] == "cold") & t["request_bytes"].notna()]
    bound = list(cold[cold["device_bound"] == "requests"]["spec"])
    if not iops or not rate:
        return {"bound": [], "window_kb": None, "text": (
            "the device's reads per second are not known (no `loadbench probe --storage here` "
            "of its folder): the device is priced by its bytes per second alone, so request "
            "sizes and read-ahead change no prediction")}
    need = max(4, 2 ** math.ceil(math.log2(rate * 1e9 / iops / 1024)))  # KiB, a whole page
    where = (f"{iops:.0f} reads/s; read-ahead {ahead:.0f} KiB, largest request "
             f"{largest:.0f} KiB" if ahead and largest else f"{iops:.0f} reads/s")
    if not bound:
        small = cold["request_bytes"].min() if len(cold) else math.nan
        reach = f" (the smallest request, {size_text(small)}, reaches {iops * small / 1e9:.3g} "\
                f"GB/s)" if small == small else ""
        return {"bound": [], "window_kb": need, "text": (
            f"{where}: no candidate is bound by its requests{reach}, above the device's "
            f"{rate:.3g} GB/s: neither read-ahead nor a chunk size changes a prediction here")}
    fix = (f"a read-ahead window of {need} KiB (`blockdev --setra {need * 2}`) would let "
           "buffered reads and mappings reach it" if not largest or need <= largest else
           f"no read-ahead can: a request reaches {largest:.0f} KiB at most")
    return {"bound": bound, "window_kb": need, "text": (
        f"{where}: bound by requests below the device's {rate:.3g} GB/s: "
        f"{', '.join(bound)}; {fix}")}
