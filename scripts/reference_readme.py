"""results/reference/README.md: how the reference was made (command, commit, machine, date)
and what it says, from the results folders themselves (env.json, runs.jsonl, summary.json).

    /usr/bin/python3 scripts/reference_readme.py DIR NAME... > DIR/README.md
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from analysis.core import results  # noqa: E402
from analysis.sections import verdict  # noqa: E402
from analysis.core.machine import machine_state  # noqa: E402


def gib(n) -> str:
    return f"{n / 2**30:.1f} GiB" if isinstance(n, (int, float)) else "unknown"


def machine(env: dict) -> str:
    host, kernel = env.get("host") or {}, env.get("kernel") or {}
    storage, fs = env.get("storage") or {}, env.get("filesystem") or {}
    virt = (env.get("virtualization") or {}).get("hypervisor_flag")
    return (f"{host.get('cpu_model', 'unknown CPU')}, {host.get('cores', '?')} cores, "
            f"{gib(host.get('memory_bytes'))} of memory, no swap"
            f"{', a virtual machine' if virt else ''}; Linux {kernel.get('release', '?')}; "
            f"{storage.get('driver') or storage.get('device') or 'unknown'} disk, "
            f"{fs.get('type', '?')}")


def estimate(env: dict, r) -> str:
    """The time left the progress line gave at the first tenth of the runs, against the time the
    rest took."""
    sessions = [s for s in env.get("sessions") or [] if isinstance(s, dict) and "estimate" in s]
    if len(sessions) != 1 or len(env.get("sessions")) != 1:
        return "not recorded in one session"
    e = sessions[0]["estimate"]
    records = results.pd.concat([r.runs, r.ceiling], ignore_index=True)
    start = verdict.stamps(records, "started_at").min()
    end = verdict.stamps(records, "ended_at").max()
    rest = (end - start).total_seconds() - e["elapsed_s"]
    return (f"at {e['runs_done']} of {e['runs_total']} runs: {verdict.clock(e['left_s'])} left; "
            f"the rest took {verdict.clock(rest)} ({e['left_s'] / rest:.2f}×)")


def section(folder: str, name: str) -> str:
    r = results.load(os.path.join(folder, name))
    env = r.env
    with open(os.path.join(folder, name, "summary.json")) as f:
        summary = json.load(f)
    file = env.get("file") or {}
    counts = r.runs["status"].value_counts().to_dict() if len(r.runs) else {}
    status = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    question = str((env.get("experiment_file") or {}).get("question", "")).strip()
    question = question[:question.find("?") + 1] if "?" in question else question
    lines = [f"## {name}/", "",
             f"- experiment: `{(env.get('experiment_file') or {}).get('path', '?')}`: "
             f"{question}",
             f"- machine state: {machine_state(env)}",
             f"- command: `{env.get('command_line', '?')}`",
             f"- commit: `{(env.get('loadbench') or {}).get('commit', '?')}`",
             f"- date: {env.get('time_utc', '?')}. {verdict.took(r)}",
             f"- file: {os.path.basename(str(file.get('path', '?')))} "
             f"({gib(file.get('file_bytes'))}, {file.get('format', '?')})",
             f"- runs: {status}; ceiling reads: {len(r.ceiling)}",
             f"- time left at a tenth of the runs: {estimate(env, r)}",
             "", "Verdict:", ""]
    lines += [f"- {line}" for line in verdict.lines(summary, most=8)]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: reference_readme.py DIR NAME...", file=sys.stderr)
        return 2
    folder, names = argv[0], argv[1:]
    env = results.load(os.path.join(folder, names[0])).env
    print("# results/reference\n")
    print("What `make compare` sets a new machine against: the default experiment (tuned, as "
          "it asks, and again untuned) and the full one, each run from a clean tree with the "
          "command and commit listed below, thinned to 200 timeline rows (`analysis.trim`), "
          "with its report. `make reference` (scripts/reference.sh) makes them again. Compare "
          "a fresh `make run` with it:\n\n"
          "    make compare A=results/reference B=results/quick-<time>\n")
    print(f"Machine: {machine(env)}.\n")
    if os.path.exists(os.path.join(folder, "machines", "machines.md")):
        print("The machine's two states side by side, each strategy against the machine's "
              "limits, the order flips between them and the model of a load from the probe's "
              "figures: [machines/machines.md](machines/machines.md), made by\n\n"
              "    make machines DIRS=\"results/reference/quick results/reference/quick-untuned\" "
              "OUT=results/reference/machines\n\nAdd a folder of your own machine to DIRS.\n")
    print("\n\n".join(section(folder, name) for name in names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
