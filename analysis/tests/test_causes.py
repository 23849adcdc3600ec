"""Where the time went (analysis/stats/causes.py) on the real profiles of fixtures/profiles (see its
README.md): recorded call chains fall to the cause their leaf-most named frame gives, no profile
leaves much to the fallbacks, a single-threaded run's causes and waiting add up to its wall
time, a bad folded file is one line naming it, and the report has the section, its figures
and flame graphs and a `why` from the profile, while a folder without profiles has none."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import build_report_of

from analysis.core import results
from analysis.core.results import ResultsError
from analysis.pages import report
from analysis.sections import where as where_sections
from analysis.stats import causes

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
FIXTURE = os.path.join(FIXTURES, "profiles")
THREADS = os.path.join(FIXTURES, "threads")
SEVERAL = ("pool:threads=4", "pread_mt:threads=4", "mmap_prefetch")
ONE = ("fread", "layered:consume=random")
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FREAD_WARM, IO_URING_WARM = "20261202T010024-0008", "20261202T010024-0010"
ODIRECT_WARM, MMAP_SEQ_WARM, THP_WARM = ("20261202T010024-0012", "20261202T010024-0011",
                                         "20261202T010024-0013")
FREAD_COLD, THP_COLD = "20261202T010024-0001", "20261202T010024-0006"
TITLE = f"## {where_sections.WHERE_TITLE}"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_report_of(tmp_path_factory, FIXTURE)


def folded(run_id):
    return os.path.join(FIXTURE, "profiles", f"{run_id}.folded")


def record(run_id):
    with open(os.path.join(FIXTURE, "runs.jsonl")) as f:
        return next(r for r in map(json.loads, f) if r["run_id"] == run_id)


def recorded(run_id, *tail):
    """The frames of the first call chain of the run's profile that ends in `tail`."""
    found = [frames for frames, _ in causes.read_folded(folded(run_id))
             if frames[-len(tail):] == tail]
    assert found, f"{run_id}: no call chain ends in {tail}"
    return found[0]


def shares_of(table, spec, cache):
    """causes.shares' entry for the group of `spec` in `cache` of summarize's table."""
    row = table[(table["strategy_spec"] == spec) & (table["cache"] == cache)].iloc[0]
    return causes.shares(table)[tuple(row[results.GROUP])]


def section(md):
    return md.split(TITLE, 1)[1].split("\n## ", 1)[0]


def copy(tmp_path, edit, fixture=FIXTURE):
    """A copy of the fixture whose records `edit(records)` changes in place."""
    folder = tmp_path / os.path.basename(fixture)
    shutil.copytree(fixture, folder)
    records = [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]
    edit(records)
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


@pytest.mark.parametrize("run_id, tail, cause", [
    # The hypervisor's time, seen where the fault re-enables interrupts, inside the copy.
    (FREAD_WARM, ("__memmove_avx512_unaligned_erms", "asm_exc_page_fault_[k]",
                  "exc_page_fault_[k]", "__raw_callee_save_pvm_irq_enable_[k]",
                  "pvm_irq_enable_[k]"), "hypervisor and exception entry"),
    (FREAD_WARM, ("__memmove_avx512_unaligned_erms", "asm_exc_page_fault_[k]",
                  "exc_page_fault_[k]", "handle_mm_fault_[k]", "__handle_mm_fault_[k]"),
     "page-fault handling"),
    (THP_WARM, ("vma_alloc_anon_folio_pmd_[k]", "folio_zero_user_[k]", "clear_page_erms_[k]"),
     "page zeroing"),
    # A fault inside the kernel's copy, zeroing a 2 MiB page: the zeroing's time.
    (THP_COLD, ("_copy_to_iter_[k]", "asm_exc_page_fault_[k]", "exc_page_fault_[k]",
                "handle_mm_fault_[k]", "__handle_mm_fault_[k]",
                "do_huge_pmd_anonymous_page_[k]", "vma_alloc_anon_folio_pmd_[k]",
                "folio_zero_user_[k]"), "page zeroing"),
    (FREAD_COLD, ("filemap_read_[k]", "copy_page_to_iter_[k]", "_copy_to_iter_[k]"),
     "kernel copy to user"),
    (IO_URING_WARM, ("__io_read_[k]", "filemap_read_[k]", "copy_page_to_iter_[k]",
                     "_copy_to_iter_[k]"), "kernel copy to user"),
    (IO_URING_WARM, ("__do_sys_io_uring_enter_[k]", "io_submit_sqes_[k]"),
     "I/O submission and completion"),
    (ODIRECT_WARM, ("virtio_queue_rq_[k]", "virtqueue_notify_[k]", "vp_notify_[k]",
                    "iowrite16_[k]"), "I/O submission and completion"),
    (FREAD_WARM, ("loadbench::UsePipeline::LoadModel", "__memmove_avx512_unaligned_erms"),
     "the strategy's copy"),
    (MMAP_SEQ_WARM, ("loadbench", "[unknown]", "XXH3_64bits_update"), "the consumer"),
    (MMAP_SEQ_WARM, ("[unknown]", "XXH3_64bits_update", "asm_exc_page_fault_[k]",
                     "exc_page_fault_[k]", "__raw_callee_save_pvm_irq_enable_[k]",
                     "pvm_irq_enable_[k]"), "hypervisor and exception entry"),
])
def test_recorded_call_chains_fall_to_their_cause(run_id, tail, cause):
    assert causes.classify(recorded(run_id, *tail)) == cause


def test_the_leaf_decides_where_the_chain_stops():
    """io_uring's read: the kernel's copy when the sample was in it, I/O when in __io_read
    itself (the same recorded chain, cut there); a frame no cause names passes it on."""
    chain = recorded(IO_URING_WARM, "__io_read_[k]", "filemap_read_[k]",
                     "copy_page_to_iter_[k]", "_copy_to_iter_[k]")
    assert causes.classify(chain) == "kernel copy to user"
    cut = chain[:chain.index("__io_read_[k]") + 1]
    assert causes.classify(cut) == "I/O submission and completion"
    assert causes.classify(cut + ("_raw_spin_lock_[k]",)) == "I/O submission and completion"
    assert causes.classify(("loadbench", "[unknown]", "_int_malloc")) == causes.OTHER_USER
    assert causes.classify(("loadbench", "ret_from_fork_[k]")) == causes.OTHER_KERNEL
    # The user-space copy's patterns do not take a kernel memcpy.
    assert causes.frame_cause("memcpy_orig_[k]") is None
    assert causes.frame_cause("__memcpy_[k]") is None


@pytest.mark.parametrize("name", sorted(os.listdir(os.path.join(FIXTURE, "profiles"))))
def test_no_profile_leaves_a_tenth_to_the_fallbacks(name):
    run_id = name[:-len(".folded")]
    r = record(run_id)
    s = causes.seconds(causes.read_folded(folded(run_id)), r["profile"]["hz"])
    on_cpu = s.sum()
    assert on_cpu == pytest.approx(r["profile"]["on_cpu_s"])
    assert (s[causes.OTHER_KERNEL] + s[causes.OTHER_USER]) / on_cpu < 0.10


def test_a_single_threaded_runs_causes_and_waiting_add_up_to_its_wall_time():
    """The fixture's records predate per-thread figures: each is read as one thread, its
    waiting the wall time less its samples."""
    runs = causes.profiled(results.load(FIXTURE)).set_index("run_id")
    for run_id in (FREAD_WARM, ODIRECT_WARM, MMAP_SEQ_WARM):
        r = record(run_id)
        assert runs.loc[run_id, "shares_of"] == "wall"
        s = causes.run_seconds(runs.loc[run_id])
        assert list(s.index) == causes.NAMES + [causes.WAITING]
        assert s.sum() == pytest.approx(r["wall_s"])
        assert s[causes.WAITING] == pytest.approx(r["wall_s"] - r["profile"]["on_cpu_s"])
    assert causes.waiting({}, 1.420722876, 1.236) == pytest.approx(0.184722876)
    # Samples that overshoot the wall time by a period: no waiting, never below 0.
    assert causes.waiting({}, 1.0, 1.004) == 0
    # A record with per-thread figures says its waiting itself.
    assert causes.waiting({"waiting_s": 0.5}, 1.0, 1.7) == 0.5


def test_the_fixtures_shares_are_what_its_readme_says():
    table = causes.summarize(results.load(FIXTURE))
    fread = shares_of(table, "fread", "warm")
    assert fread["of"] == "wall"
    assert round(fread["shares"]["the strategy's copy"], 2) == 0.55
    assert round(fread["shares"]["hypervisor and exception entry"], 2) == 0.32
    assert round(shares_of(table, "io_uring:buffer=thp", "warm")["shares"]["page zeroing"],
                 2) == 0.90


def test_every_groups_shares_add_up_to_what_they_are_shares_of():
    table = causes.summarize(results.load(FIXTURE))
    for key, parts in causes.shares(table).items():
        assert sum(parts["shares"].values()) == pytest.approx(1.0), key


def test_a_group_is_its_profiled_runs_means_and_its_run_nearest_the_median(tmp_path):
    """Two more warm fread runs (the same profile, other wall times) and one unprofiled: the
    median wall time of the group's 4 ok runs is 2.5 s, and the profiled run nearest it the
    one of 2.6 s; wall time, causes and waiting are means over the 3 profiled runs, so that
    they add up."""
    def more(records):
        fread = next(r for r in records if r["run_id"] == FREAD_WARM)
        for run_id, wall in (("extra-1", 2.6), ("extra-2", 3.5)):
            records.append({**fread, "run_id": run_id, "wall_s": wall})
        unprofiled = {k: v for k, v in fread.items() if k != "profile"}
        records.append({**unprofiled, "run_id": "extra-3", "wall_s": 2.4})

    r = results.load(str(copy(tmp_path, more)))
    row = causes.summarize(r).set_index(["strategy_spec", "cache"]).loc[("fread", "warm")]
    assert row["n"] == 3 and row["run_id"] == "extra-1"
    wall = (2.321994053 + 2.6 + 3.5) / 3
    assert row["wall_s"] == pytest.approx(wall) and row["on_cpu_s"] == pytest.approx(2.316)
    assert row[causes.WAITING] == pytest.approx(wall - 2.316)
    assert row["the strategy's copy"] == pytest.approx(1.272)
    assert row[causes.NAMES].sum() + row[causes.WAITING] == pytest.approx(row["wall_s"])


def test_several_threads_have_shares_of_cpu_time_that_add_up():
    """The threads fixture (see its README.md): pool's, pread_mt's and mmap_prefetch's threads
    share out their CPU time, fread's and layered's one thread its wall time; each adds up."""
    table = causes.summarize(results.load(THREADS))
    for spec in SEVERAL + ONE:
        parts = shares_of(table, spec, "warm")
        assert parts["of"] == ("cpu" if spec in SEVERAL else "wall"), spec
        assert (causes.WAITING in parts["shares"]) == (spec in ONE), spec
        assert sum(parts["shares"].values()) == pytest.approx(1.0), spec
        assert max(parts["shares"].values()) <= 1.0


def test_several_threads_wait_each_on_their_own():
    """A run of several threads waits as its record says, each thread's waiting added up: not
    its wall time less every thread's samples, which is 0 once they pass the wall time."""
    table = causes.summarize(results.load(THREADS)).set_index("strategy_spec")
    for spec in SEVERAL:
        row = table.loc[spec]
        (r,) = [x for x in map(json.loads, open(os.path.join(THREADS, "runs.jsonl")))
                if x["strategy_spec"] == spec]
        per_thread = sum(t["waiting_s"] for t in r["profile"]["per_thread"])
        assert row[causes.WAITING] == pytest.approx(per_thread)
        assert row["threads"] == len(r["profile"]["per_thread"]) > 1
        assert row[causes.WAITING] > max(0.0, row["wall_s"] - row["on_cpu_s"]) + 1e-3, spec
    for spec in ONE:  # one thread: its wall time less its samples, as ever
        row = table.loc[spec]
        assert row[causes.WAITING] == pytest.approx(row["wall_s"] - row["on_cpu_s"], abs=1e-6)


def test_cpu_time_past_the_wall_time_is_still_100_percent(tmp_path):
    """The fixture's machine had 2 cores; on more, pool's 4 readers run side by side and its
    CPU time passes its wall time: here the same run at 0.6 of its CPU time. Its shares are
    still of the CPU time (they would add up to 167% of the wall time), the report says so, and
    its waiting is no share."""
    def faster(records):
        pool = next(r for r in records if r["strategy_spec"] == "pool:threads=4")
        pool["wall_s"] = 0.6 * pool["profile"]["on_cpu_s"]

    folder = copy(tmp_path, faster, THREADS)
    table = causes.summarize(results.load(str(folder)))
    parts = shares_of(table, "pool:threads=4", "warm")
    assert sum(parts["shares"].values()) == pytest.approx(1.0)
    report.build(str(folder))
    md = (folder / "report.md").read_text()
    row = next(line for line in section(md).splitlines() if line.startswith("| pool"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "5" and cells[5] == "CPU time" and cells[-1].endswith("(not a share)")
    percents = [int(c.rsplit("(", 1)[1].rstrip("%)")) for c in cells[6:-1]]
    assert max(percents) <= 100 and 97 <= sum(percents) <= 103  # each rounded to 1%
    warm = md.split("## Warm start", 1)[1].split("\n## ", 1)[0]
    pool = next(line for line in warm.splitlines() if line.startswith("| pool"))
    assert "| profile (of the threads' CPU time): " in pool


@pytest.mark.parametrize("text, where", [
    ("loadbench;main 12\nloadbench;main;read twelve\n", ":2: not a folded call chain"),
    ("loadbench;main 12\n\n", ":2: not a folded call chain"),
    ("42\n", ":1: not a folded call chain"),
])
def test_a_malformed_folded_file_is_an_error_naming_its_line(tmp_path, text, where):
    path = tmp_path / "bad.folded"
    path.write_text(text)
    with pytest.raises(ResultsError, match=f"bad.folded{where}"):
        causes.read_folded(str(path))


def test_a_missing_or_bad_profile_is_exit_2_in_one_line(tmp_path):
    with pytest.raises(ResultsError, match="nothing.folded: cannot read the profile"):
        causes.read_folded(str(tmp_path / "nothing.folded"))
    folder = copy(tmp_path, lambda records: None)
    with open(folder / "profiles" / f"{FREAD_WARM}.folded", "a") as f:
        f.write("loadbench;main;[unknown]\n")
    p = subprocess.run([sys.executable, "-m", "analysis.report", str(folder)], cwd=REPO,
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert f"{FREAD_WARM}.folded:58: not a folded call chain" in p.stderr


def test_the_report_says_where_the_time_went(built):
    md = (built / "report.md").read_text()
    assert md.index("## Warm start") < md.index(TITLE) < md.index("## After the load")
    where = section(md)
    assert "each thread's time in the load less its on-CPU time" in where and "PVM" in where
    for cache in ("Cold", "Warm"):
        assert f"**{cache} start**" in where
    rows = [line for line in where.splitlines() if line.startswith("| fread |")]
    assert len(rows) == 2  # cold and warm, named as in the other tables
    head = next(line for line in where.splitlines() if line.startswith("| strategy |"))
    assert "| the strategy's copy |" in head and head.endswith("| waiting (off-CPU) |")
    assert "scheduling" not in head  # under 1% everywhere: summed into the smaller causes
    cells = [c.strip() for c in rows[1].strip("|").split("|")]
    # A record without per-thread figures: no thread count, read as one thread.
    assert cells[:6] == ["fread", "1", "", "2.322", "2.316", "wall time"]
    assert "1.272 (55%)" in cells and cells[-1] == "0.006 (0%)"


def test_why_says_what_the_profile_says(built):
    md = (built / "report.md").read_text()
    warm = md.split("## Warm start", 1)[1].split("\n## ", 1)[0]
    fread = next(line for line in warm.splitlines() if line.startswith("| fread |"))
    assert fread.endswith("| profile: 55% the strategy's copy, 32% hypervisor and exception "
                          "entry |")
    odirect = next(line for line in warm.splitlines() if line.startswith("| odirect |"))
    assert odirect.endswith("| profile: 78% the consumer, 13% waiting (off-CPU) |")


def test_the_figures_and_flame_graphs_are_there(built):
    names = set(os.listdir(built / "figures"))
    assert {"causes-cold.png", "causes-warm.png", "causes-warm.svg"} <= names
    flames = sorted(n for n in names if n.startswith("flame-") and n.endswith(".svg"))
    assert len(flames) == 8  # one per group
    for name in flames:
        assert (built / "figures" / name).stat().st_size > 10_000
        assert (built / "figures" / name.replace(".svg", ".png")).stat().st_size > 0
    md = (built / "report.md").read_text()
    where = section(md)
    for name in flames + ["causes-cold.svg", "causes-warm.svg"]:  # in the section, once
        link = f"](figures/{name.replace('.svg', '.png')})"
        assert link in where and md.count(link) == 1
    # Per cache state its table, then its bars, then its groups' flame graphs.
    warm = where.split("**Warm start**", 1)[1]
    assert (warm.index("| fread |") < warm.index("](figures/causes-warm.png)")
            < warm.index("](figures/flame-warm-"))
    assert "](figures/flame-cold-" not in warm
    html = (built / "report.html").read_text()
    pngs = [n for n in names if n.endswith(".png")]
    assert html.count('src="data:image/png;base64,') == len(pngs)


def test_summary_json_has_the_causes(built):
    summary = json.loads((built / "summary.json").read_text())
    by = {(c["strategy_spec"], c["cache"]): c for c in summary["causes"]}
    assert len(by) == 8 and summary["profiles_missing"] == []
    fread = by[("fread", "warm")]
    assert fread["run_id"] == FREAD_WARM and fread["n"] == 1
    assert fread["on_cpu_s"] == pytest.approx(2.316)
    assert fread["waiting_s"] == pytest.approx(2.321994053 - 2.316)
    assert fread["seconds"]["the strategy's copy"] == pytest.approx(1.272)
    assert fread["shares_of"] == "wall" and fread["threads"] is None
    assert sum(fread["shares"].values()) == pytest.approx(1.0)
    assert set(fread["seconds"]) == set(causes.NAMES)
    assert all("cause_shares" not in g for g in summary["groups"])


def test_profiles_not_taken_are_listed_with_why(tmp_path):
    why = "perf record failed: Thread and evlist pollfd index mismatch"

    def no_profile(records):
        odirect = next(r for r in records if r["run_id"] == ODIRECT_WARM)
        odirect.update(profile=None, profile_error=why)

    folder = copy(tmp_path, no_profile)
    report.build(str(folder))
    where = section((folder / "report.md").read_text())
    assert f"- odirect, warm: 1 run ({ODIRECT_WARM}): {why}" in where
    assert "| odirect |" not in where
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["profiles_missing"] == [{"run_id": ODIRECT_WARM, "strategy_spec": "odirect",
                                            "cache": "warm", "status": "ok",
                                            "profile_error": why}]
    assert len(summary["causes"]) == 7
    md = (folder / "report.md").read_text()
    odirect = next(line for line in md.split("## Warm start", 1)[1].splitlines()
                   if line.startswith("| odirect |"))
    assert "profile:" not in odirect  # the fault-count rule, as without a profile


def test_a_folder_whose_profiles_all_failed_says_why(tmp_path):
    def none_taken(records):
        for r in records:
            r.update(profile=None, profile_error="perf did not exit 10 s after the worker")

    folder = copy(tmp_path, none_taken)
    report.build(str(folder))
    where = section((folder / "report.md").read_text())
    assert where.strip().startswith("No ok run has a profile.")
    assert "- fread, warm: 1 run (20261202T010024-0008): perf did not exit" in where
    assert not any(n.startswith(("flame-", "causes-")) for n in os.listdir(folder / "figures"))
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["causes"] == [] and len(summary["profiles_missing"]) == 8


@pytest.mark.parametrize("fixture", ["small", "after", "peers"])
def test_a_folder_without_profiles_has_no_section(tmp_path, fixture):
    folder = tmp_path / fixture
    shutil.copytree(os.path.join(FIXTURES, fixture), folder)
    assert not causes.shown(results.load(str(folder)))
    report.build(str(folder))
    md = (folder / "report.md").read_text()
    assert where_sections.WHERE_TITLE not in md and "profile:" not in md
    assert not any(n.startswith(("flame-", "causes-")) for n in os.listdir(folder / "figures"))
    summary = json.loads((folder / "summary.json").read_text())
    assert "causes" not in summary and "profiles_missing" not in summary
