"""A machine as the machines report knows it: who it is (the identity two folders must share
to pool), the state it was in (the tuned settings, which must match too), its fingerprint as
text, and its figures, the model's inputs (analysis/model.FIGURES).

From a results folder's env.json: the probe's figures (`probe.ceilings`, copied into every
run's env.json from the probe of its boot; the device's figure only where the probe measured
the device of the run's file, `probe.same_device`) and the links' ceilings its rounds measured;
for a storage the tool made (`from_storage`), the device's figures are the storage's own probe's
(env.json `storages[i].probe`: `device_limit`, the reads per second it sustained) and its loop
device's read-ahead window and largest request.

From a machine described by its figures (`--predict machine.json`), a JSON object:

    {"name": "nvme-box", "thp": "madvise", "device_gb_per_s": 6.8,
     "page_cache_gb_per_s": 14.0, "memcpy_gb_per_s": 18.0, "fill_gb_per_s": 30.0,
     "fault_4k_us": 0.25, "fault_2m_us": 40.0, "file_fault_us": 1.5,
     "h2d_gb_per_s": 25.0, "links": {"10gbit": 1.18},
     "device_iops": 3000, "read_ahead_kb": 128, "max_sectors_kb": 1280}

every key but `name` optional (a row that needs a figure it lacks gets no prediction), every
figure a number above 0; or any results folder's env.json, or the folder itself.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from analysis.core import schema
from analysis.core.results import ResultsError
from analysis.core.units import size_text
from analysis.models.load import ALL_FIGURES, FIGURES, REQUEST_FIGURES, positive
from analysis.stats import storage

GIB = 1 << 30
# What makes two folders the same machine: the hardware, the virtualisation, the kernel, the
# storage device and file system, the GPU (env.json, as dotted paths).
IDENTITY = ["host.cpu_model", "host.cores", "host.memory_bytes", "kernel.release",
            "virtualization.hypervisor_flag", "virtualization.product_name", "storage.driver",
            "storage.model", "storage.size_bytes", "filesystem.type", "gpu.device.name"]
# And the state it was in: the settings that change a load's time, tuned or found.
STATE = {"thp.enabled": "THP", "thp.defrag": "THP defrag", "system.tuned": "tuned",
         "system.page_reporting": "free page reporting", "system.damon_pageout": "DAMON pageout",
         "storage.read_ahead_kb": "read-ahead KiB", "storage.scheduler": "scheduler"}
WHAT_ADDS_FIGURES = ("`make probe` (loadbench probe) on that machine, then the experiment again: "
                     "every run copies the probe of its boot into its env.json")


@dataclass
class Figures:
    """A machine's model inputs: `figures` (model.FIGURES' names to numbers, None where
    unknown), its links' ceilings (link name to GB/s), its THP setting; `lacks` says why
    figures are missing ("" where none is)."""
    name: str
    figures: dict = field(default_factory=dict)
    links: dict = field(default_factory=dict)
    thp: str | None = None
    lacks: str = ""
    # Where the probe ran in another state than the runs (free page reporting on or off), so
    # that its first touches are the other state's; "" where not, or where it is not recorded.
    caveat: str = ""


def dig(env, dotted: str):
    """env.json's value at a dotted path; None where a step is missing or no object."""
    value = env
    for step in dotted.split("."):
        value = value.get(step) if isinstance(value, dict) else None
    return value


def text(value) -> str:
    return "?" if value is None or isinstance(value, (dict, list)) else str(value)


def identity(env: dict) -> tuple:
    values = [dig(env, k) for k in IDENTITY]
    memory = positive(values[2])
    values[2] = round(memory / GIB, 1) if memory else None  # a boot's MemTotal varies a little
    return tuple(text(v) for v in values)


def state(env: dict) -> tuple:
    return tuple(text(dig(env, k)) for k in STATE)


def check(folder: str, env: dict, problems) -> None:
    """ResultsError, one line naming the folder's env.json, where it is missing or damaged (no
    JSON object), or foreign (an object holding no key a loadbench env.json has): a machine
    without one is unknown. An env.json that holds some of them is read as far as it goes."""
    path = os.path.join(folder, "env.json")
    said = [p.what for p in problems if str(p.path).endswith("env.json") and p.field is None]
    if said and not env:
        unknown = "" if "unknown" in said[0] else "; the machine is unknown"
        raise ResultsError(f"{path}: {said[0]}{unknown}")
    if not any(key in schema.ENV for key in env):
        raise ResultsError(f"{path}: not a loadbench env.json (none of its keys, such as `host`, "
                           "`kernel` or `probe`): the machine is unknown")


def from_env(env: dict, name: str, links: dict | None = None) -> Figures:
    """The figures of the machine an env.json describes (its probe's), with `links`."""
    probe = dig(env, "probe.ceilings")
    found = {k: positive(dig(probe, f"{key}.{f}")) for k, (key, f) in FIGURES.items()}
    lacks = ""
    if not isinstance(probe, dict):
        lacks = f"its env.json has no probe figures: {WHAT_ADDS_FIGURES}"
    elif dig(env, "probe.same_device") is False:
        found["device_gb_per_s"] = None
        lacks = "the probe measured another device than the runs' file's"
    elif found["device_gb_per_s"] is None:
        lacks = ("its probe has no device figure (the quick probe of a boot without a full "
                 f"one): {WHAT_ADDS_FIGURES}")
    thp = dig(env, "thp.enabled")
    return Figures(name, found, dict(links or {}), thp if isinstance(thp, str) else None, lacks,
                   caveat(env))


def from_storage(env: dict, label: str, name: str, links: dict | None = None) -> Figures:
    """The figures of a storage the tool made (`label`, env.json `storages`' entry): the
    machine's (`from_env`) but for the device (models/load.REQUEST_FIGURES added), which is
    the storage's own probe's (its `device_limit` and the most reads per second it sustained,
    `iops`; the env.json's own probe where it is one of `loadbench probe --storage`), and the
    storage's loop device's read-ahead window and largest request. Without a probe of its own (or an entry)
    it has no device figure, and `lacks` says so: its rows that read the device get no share
    of the limit and no prediction. The data folder as it is ("") is the machine's, its
    requests those of the data folder's device (env.json `storage`)."""
    figures = from_env(env, name, links)
    if not label:
        # The data folder's block device: its requests (models/load.request_bytes), and no
        # reads per second figure, so that its device stage is priced by bytes alone.
        figures.figures.update(
            device_iops=None, read_ahead_kb=positive(dig(env, "storage.read_ahead_kb")),
            max_sectors_kb=positive(dig(env, "storage.max_sectors_kb")), max_segments=None)
        return figures
    made = storage.entry(env, label)
    probe = made.get("probe") if made else None
    if made is not None and probe is None and dig(env, "probe.kind") == "storage":
        probe = env["probe"]  # `loadbench probe --storage`'s env.json: its probe is the storage's
    loop = (made or {}).get("loop") or {}
    figures.figures.update(
        device_gb_per_s=positive(dig(probe, "ceilings.device_limit.gb_per_s")),
        device_iops=positive(dig(probe, "iops")),
        read_ahead_kb=positive(loop.get("read_ahead_kb")),
        max_sectors_kb=positive(loop.get("max_sectors_kb")),
        max_segments=positive(loop.get("max_segments")))
    why = ("env.json names no such storage (`storages`)" if made is None else
           "no probe of its own" if not isinstance(probe, dict) else
           "its probe has no device figure (`device_limit`)"
           if figures.figures["device_gb_per_s"] is None else "")
    if why:
        figures.lacks = f"the storage {label}: {why}, so its device is not predicted"
    elif "no probe figures" not in figures.lacks:
        figures.lacks = ""  # the device figure the machine's probe lacked, the storage's gives
    return figures


def storage_facts(env: dict, label: str | None, figures: Figures) -> dict[str, str]:
    """A storage variant's facts for the Machines table (`label` None: a machine measured
    whole, whose runs had no storage axis): what the storage is, its device class, its block
    device's read-ahead window and largest request, and its probe's reads per second."""
    if label is None:
        return {k: "—" for k in ("storage made", "device class", "read-ahead / largest request",
                                 "device reads/s (probe)")}
    made = storage.entry(env, label) or {}
    cls = made.get("device_class") or {}
    limits = [f"preset {cls['preset']}" if cls.get("preset") else "",
              f"{cls['read_bps'] / 1e6:.0f} MB/s" if positive(cls.get("read_bps")) else "",
              f"{cls['read_iops']:.0f} IOPS" if positive(cls.get("read_iops")) else ""]
    ahead, largest = (figures.figures.get(k) for k in ("read_ahead_kb", "max_sectors_kb"))
    loop = dig(made, "loop.device")
    return {
        "storage made": "the data folder as it is" if not label else
        f"{text(made.get('kind'))} on {loop}" if loop else
        f"{text(made.get('kind'))}, no block device",
        "device class": ", ".join(x for x in limits if x) or "none",
        "read-ahead / largest request": " / ".join(
            f"{v:.0f}" if v else "?" for v in (ahead, largest)) + " KiB"
        if ahead or largest else "—",
        "device reads/s (probe)": f"{figures.figures['device_iops']:.0f}"
        if figures.figures.get("device_iops") else "—",
    }


def caveat(env: dict) -> str:
    """Why the probe's first touches may not be the runs' state's: it ran with free page
    reporting on and the runs off, or the other way; "" where both match or either is not
    recorded (a probe from before its facts carried the state)."""
    probe, runs = dig(env, "probe.facts.page_reporting"), dig(env, "system.page_reporting")
    if not isinstance(probe, str) or not isinstance(runs, str) or probe == runs:
        return ""
    return (f"its probe ran with free page reporting {probe}, its runs with it {runs}: the "
            "probe's first touches are of the other state (`make probe` in the runs' state)")


def probe_state(env: dict) -> str:
    """The machine's state the probe ran in, as its facts say."""
    tuned = dig(env, "probe.facts.tuned")
    if not isinstance(tuned, bool):
        return "not recorded"
    return ("tuned" if tuned else "untuned") + \
        f" (free page reporting {text(dig(env, 'probe.facts.page_reporting'))})"


def _given(data: dict, path: str) -> Figures:
    """The figures of a machine described by them (the module's docstring)."""
    known = set(ALL_FIGURES) | {"name", "thp", "links"}
    extra = sorted(set(data) - known)
    if extra:
        raise ResultsError(f"{path}: unknown key {extra[0]!r} (known: {', '.join(sorted(known))})")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ResultsError(f"{path}: no `name` (a text naming the machine)")
    bad = [k for k in ALL_FIGURES if k in data and positive(data[k]) is None]
    links = data.get("links", {})
    if not isinstance(links, dict) or any(positive(v) is None for v in links.values()):
        bad.append("links")
    if bad:
        raise ResultsError(f"{path}: `{bad[0]}` is not a number above 0")
    thp = data.get("thp")
    given = [k for k in REQUEST_FIGURES if k in data]  # a storage's, only where described
    return Figures(name, {k: positive(data.get(k)) for k in [*FIGURES, *given]}, dict(links),
                   thp if isinstance(thp, str) else None)


def read(path: str) -> Figures:
    """A machine to predict for: a results folder, an env.json, or a JSON of its figures;
    ResultsError, one line naming the file, where it is none of them."""
    if os.path.isdir(path):
        path = os.path.join(path, "env.json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError) as e:
        raise ResultsError(f"{path}: cannot read: {e.strerror if isinstance(e, OSError) else e}")
    except ValueError as e:
        raise ResultsError(f"{path}: not JSON ({e})")
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: not a JSON object")
    if "probe" in data or "loadbench" in data:
        folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
        name = f"{text(dig(data, 'host.hostname'))} ({folder})"
        made = data.get("storages") if dig(data, "probe.kind") == "storage" else None
        if isinstance(made, list) and len(made) == 1 and isinstance(made[0], dict) and \
                isinstance(made[0].get("label"), str) and made[0]["label"]:
            # `loadbench probe --storage`'s: the device is that storage's.
            return from_storage(data, made[0]["label"], f"{name}, {made[0]['label']}")
        return from_env(data, name)
    return _given(data, path)


def fingerprint(env: dict, figures: Figures) -> dict[str, str]:
    """The machine as facts, each a short text: what the report sets side by side."""
    def f(key, unit, fmt=".3g"):
        value = figures.figures.get(key)
        return "—" if value is None else f"{value:{fmt}} {unit}"
    storage = env.get("storage") if isinstance(env.get("storage"), dict) else {}
    return {
        "CPU": f"{text(dig(env, 'host.cpu_model'))}, {text(dig(env, 'host.cores'))} cores",
        "memory": size_text(positive(dig(env, "host.memory_bytes"))),
        "kernel": text(dig(env, "kernel.release")),
        "virtualisation": _virtual(env),
        "storage": f"{text(storage.get('device'))} ({text(storage.get('driver'))}, model "
                   f"{text(storage.get('model'))}, rotational {text(storage.get('rotational'))})",
        "file system": text(dig(env, "filesystem.type")),
        "GPU": text(dig(env, "gpu.device.name")) if dig(env, "gpu.available") else "none",
        **{label: text(dig(env, key)) for key, label in STATE.items()},
        "device (probe)": f("device_gb_per_s", "GB/s"),
        "page cache read": f("page_cache_gb_per_s", "GB/s"),
        "memcpy": f("memcpy_gb_per_s", "GB/s"),
        "memory fill": f("fill_gb_per_s", "GB/s"),
        "4 KiB first touch": f("fault_4k_us", "µs"),
        "2 MiB first touch": f("fault_2m_us", "µs"),
        "file mapping fault": f("file_fault_us", "µs"),
        "host to GPU": f("h2d_gb_per_s", "GB/s"),
        "links": ", ".join(f"{k or 'unshaped'} {v:.3g} GB/s" for k, v in figures.links.items())
                 or "none measured",
        "probe": f"{text(dig(env, 'probe.kind'))}, {text(dig(env, 'probe.time_utc'))}",
        "probe's state": probe_state(env),
    }


def _virtual(env: dict) -> str:
    flag = dig(env, "virtualization.hypervisor_flag")
    product = dig(env, "virtualization.product_name")
    out = "unknown" if flag is None else ("a VM" if flag else "bare metal")
    if isinstance(product, str):
        out += f" ({product})"
    if dig(env, "virtualization.free_page_reporting") is True:
        out += "; free memory handed back to the host"
    return out
