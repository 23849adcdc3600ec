import json
import os
import shutil
import sys

import numpy as np

# `import analysis` from the repository root, wherever pytest is started.
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

FILE = "/data/llama-4GiB.wlf"
FILE_BYTES = 4 * 10**9
DEVICE_GB_PER_S = 2.0  # the synthetic device's speed at the first round


def build_report_of(tmp_path_factory, fixture):
    """A copy of the results folder `fixture` with its report built, once per test module: the
    tests only read what the report wrote."""
    from analysis.pages import report

    folder = tmp_path_factory.mktemp("built") / "results"
    shutil.copytree(fixture, folder)
    report.build(str(folder))
    return folder


def section_of(md: str, title: str) -> str:
    """The body of the report section `title` in the Markdown `md`, up to the next section."""
    assert f"## {title}" in md
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def row_cells(text: str, name: str, after: str = "") -> list[str]:
    """The cells of the first table row named `name` in `text`, after the line `after`."""
    text = text.split(after, 1)[1] if after else text
    line = next(ln for ln in text.splitlines() if ln.startswith(f"| {name} |"))
    return [c.strip() for c in line.strip("|").split(" | ")]


def written_by(folder: str, records: list) -> bool:
    """Whether the fixture folder's runs.jsonl holds what its generator's `records` write."""
    with open(os.path.join(folder, "runs.jsonl"), encoding="utf-8") as f:
        written = [json.loads(line) for line in f]
    return written == json.loads(json.dumps(records))


def stability(warnings=()):
    """A stability check shaped as the contract's (figures made up): still busy after its wait
    when there are warnings, else settled after one."""
    wait = ({"settled": False, "waited_s": 60.2, "waited_for": "other work used 99% of a CPU"}
            if warnings else {"settled": True, "waited_s": 3.5,
                              "waited_for": "other work used 87% of a CPU over 0.5 s"})
    return {"window_s": 0.5, "max_wait_s": 60, **wait,
            "busy": {"cpu_percent": 4.0, "runnable": 0.2, "io_in_flight": 0.0},
            "loadavg": [0.12, 0.3, 0.25], "cores": 2,
            "busy_processes": [{"pid": 812, "comm": "unattended-upgr", "cpu_percent": 41.0}],
            "dirty_bytes": 1258291, "writeback_bytes": 0, "mem_available_bytes": 6 << 30,
            "mem_total_bytes": 8 << 30, "swap_total_bytes": 0, "swap_used_bytes": 0,
            "khugepaged": {"pages_collapsed": 10, "full_scans": 3, "pages_collapsed_delta": 0,
                           "full_scans_delta": 0, "cpu_percent": 0.0},
            "warnings": list(warnings)}


def write_rounds(folder, *, rounds=12, times=None, caches=("cold", "warm"), drift=1.0,
                 sigma=0.02, ceiling=True, outliers=(), seed=0, rounds_env=True,
                 adaptive=None, baseline="fread", failed=(), device=None, recipe=None):
    """A synthetic results folder of `rounds` rounds per cache state, written as the harness
    writes them: per round (rep) of each condition, a ceiling read first (cold, with
    `ceiling`), then every strategy once in an order rotated by the round. Every time of round
    r is multiplied by drift ** (r / (rounds - 1)) (the ceiling's GB/s divided by it) and by
    log-normal noise of `sigma`; `outliers` are (spec, cache, rep, factor) multiplied in;
    `failed` are (spec, cache, rep) written with status failed; `device`, the ceiling's GB/s
    per round instead (neither drift nor noise), read by `recipe` where one is named (else the
    probe's read from before recipes). Returns the records."""
    times = times or {"fread": 10.0, "mmap_seq": 1.0, "odirect": 5.0}
    rng = np.random.default_rng(seed)
    specs = list(times)
    records = []

    def base(i, spec, cache, rep, position):
        return {"run_id": f"r{i:04d}", "experiment": "synthetic", "strategy": spec.split(":")[0],
                "strategy_spec": spec, "params": {}, "file": FILE, "format": "wlf",
                "file_bytes": FILE_BYTES, "cache": cache, "rep": rep, "position": position,
                "status": "ok", "error": None, "started_at": "2026-12-01T10:00:00Z"}

    for rep in range(rounds):
        factor = drift ** (rep / max(rounds - 1, 1))
        for cache in caches:
            position = 0
            if ceiling and cache == "cold":
                gbps = (device[rep] if device else
                        DEVICE_GB_PER_S / factor * float(np.exp(rng.normal(0, sigma))))
                records.append({**base(len(records), "ceiling", cache, rep, position),
                                "wall_s": FILE_BYTES / gbps / 1e9, "ceiling_bytes": FILE_BYTES,
                                "gb_per_s": gbps, "checksum_ok": None,
                                "params": {"recipe": recipe, "chosen": "probe"} if recipe else
                                {"queue_depth": 32, "block_bytes": 1048576, "direct": "on"}})
                position += 1
            for k in range(len(specs)):
                spec = specs[(k + rep) % len(specs)]
                wall = times[spec] * factor * float(np.exp(rng.normal(0, sigma)))
                wall /= 10 if cache == "warm" else 1
                for o_spec, o_cache, o_rep, o_factor in outliers:
                    if (o_spec, o_cache, o_rep) == (spec, cache, rep):
                        wall *= o_factor
                rec = {**base(len(records), spec, cache, rep, position + k),
                       "checksum_ok": True, "wall_s": wall, "peak_rss_bytes": FILE_BYTES,
                       "major_faults": 0, "minor_faults": 1000, "read_bytes": FILE_BYTES,
                       "timeline": None}
                if (spec, cache, rep) in failed:
                    rec.update(status="failed", error="synthetic failure", wall_s=None)
                records.append(rec)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "runs.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    env = {"experiment": "synthetic", "host": {"cores": 2}}
    if rounds_env:
        env["rounds"] = {"order": "interleaved", "seed": 7, "ceiling": ceiling,
                         "baseline": baseline, "reps": "auto" if adaptive else rounds,
                         "auto": ({"target": 0.1, "min_rounds": 6, "max_rounds": 30,
                                   "budget_s": 0} if adaptive else None)}
        env["stability"] = stability(["The machine was still busy after 60 s of waiting: other "
                                      "work used 99% of a CPU"])
        env["sessions"] = [{"started_at": "2026-12-01T10:00:00Z", "command_line": "x",
                            "runs_recorded_before": 0, "stability": stability()}]
    with open(os.path.join(folder, "env.json"), "w") as f:
        json.dump(env, f)
    if adaptive:
        with open(os.path.join(folder, "adaptive.json"), "w") as f:
            json.dump(adaptive, f)
    return records
