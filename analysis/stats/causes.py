"""Where a load's time went: each profiled run's CPU samples sorted into causes, in seconds.

A profiled run (`loadbench run --profile`) has perf's cpu-clock samples of the worker's
threads over its timed region, folded into `profiles/RUN_ID.folded` (its record's
`profile.folded`, relative to the results folder): one line per distinct call chain, its frames
root first joined by `;` (the first is the thread's name), a space and the number of samples.
Kernel frames end in `_[k]`; demangled C++ frames may hold spaces, so a line splits at its last
space. A sample is 1/hz s of one thread on a CPU.

A call chain's cause (`classify`) is found from its leaf toward its root: at each frame the
causes of CAUSES are tried in the table's order, and the first frame that matches one decides.
A chain that none matches is `other kernel` when its leaf is a kernel frame, else `other user`.
Leaf first, because the CPU was in the leaf: a page fault taken inside a memcpy is the fault's
time, not the copy's, and the zeroing of the page inside that fault is the zeroing's; the
frames further up only say who asked for the work. A frame that names no cause (a lock, a
counter, a list check) passes the sample on to its caller.

What the shares are of depends on the threads (the record's `profile.shares_of`). perf samples
each thread, and the harness works out, per thread, its time in the profile's window (the load's
own time, what wall_s adds up) and its on-CPU time there; `waiting (off-CPU)` is each thread's
time in the window less its on-CPU time, added up over the threads (`profile.waiting_s`).

- One thread (`shares_of` "wall"): its causes and its waiting add up to its wall time (on-CPU
  plus waiting, which is the wall time unless the samples overshoot it by a sampling period),
  and the shares are of that.
- Several threads (`shares_of` "cpu": pool, pread_mt, mmap_prefetch's thread, any other):
  their on-CPU time can exceed the wall time, so the causes are shares of the CPU time, and
  add up to it; their waiting, each thread's own added up, stands beside it, a share of
  nothing.

A record written before per-thread figures has no `shares_of`: it is read as one thread, with
waiting = wall_s - samples / hz, floored at 0.

Per group of comparable ok runs (results.GROUP) with a profile (`summarize`): the mean of each
cause's seconds, of the waiting and of the wall time over those runs (means, not medians, so that
a group's causes add up as each run's do), whether its shares are of wall or CPU time (CPU when
any of its runs had several threads), and the representative run, the profiled one whose wall_s
is nearest the median wall_s of the group's ok runs. `flame` lays a run's call chains out as the
rectangles of a flame graph (the report draws them).
"""

from __future__ import annotations

import collections
import functools
import os
import re

import pandas as pd

from analysis.core.results import GROUP, Results, ResultsError

# (cause, what it is, regular expressions matched at the start of a frame's name as recorded,
# `_[k]` included). In this order: where two causes' patterns match one frame, the first wins
# (filemap_fault is a page fault's, not the page cache's). The user-space copy's patterns end
# in `$` after characters a kernel frame's `_[k]` cannot end with, so that no kernel memcpy
# matches them.
CAUSES = [
    ("hypervisor and exception entry",
     "entering the kernel on an exception or interrupt, and the hypervisor's time where the "
     "guest sees it (PVM: when it re-enables interrupts; KVM, Xen, Hyper-V calls)",
     [r"pvm_", r"__raw_callee_save_pvm_", r"_paravirt_", r"kvm_", r"xen_", r"hyperv_", r"hv_",
      r"asm_exc_", r"asm_sysvec_", r"asm_common_interrupt", r"__sysvec_", r"sysvec_",
      r"common_interrupt", r"__irq_exit_rcu", r"irq_exit", r"irqentry_", r"error_entry",
      r"error_return", r"native_irq_return"]),
    ("page zeroing",
     "zeroing fresh pages before a process may see them",
     [r"clear_page", r"clear_huge_page", r"clear_subpage", r"process_huge_page",
      r"folio_zero_user", r"clear_user", r"__clear_user", r"clear_highpage",
      r"kernel_init_pages"]),
    ("page-fault handling",
     "finding the mapping and filling page-table entries on a page fault",
     [r"exc_page_fault", r"do_user_addr_fault", r"handle_mm_fault", r"__handle_mm_fault",
      r"handle_pte_fault", r"do_pte_missing", r"do_anonymous_page", r"do_fault", r"__do_fault",
      r"do_read_fault", r"do_cow_fault", r"do_shared_fault", r"do_wp_page", r"wp_page_copy",
      r"finish_fault", r"filemap_fault", r"filemap_map_pages", r"do_set_pmd", r"do_set_pte",
      r"set_pte_range", r"do_huge_pmd_", r"map_anon_folio_pmd", r"__pte_alloc", r"pmd_install",
      r"__pmd_alloc", r"lock_mm_and_find_vma", r"lock_vma_under_rcu", r"set_pte", r"set_pmd",
      r"native_set_p", r"__pte_offset_map", r"___pte_offset_map", r"pte_offset_map",
      r"folio_add_new_anon_rmap", r"folio_add_\w*rmap", r"populate_vma_page_range",
      r"__mm_populate", r"faultin_page"]),
    ("page allocation and freeing",
     "taking pages from the allocator and charging them to the cgroup, putting them on the "
     "LRU lists, and unmapping and freeing them",
     [r"get_page_from_freelist", r"__alloc_", r"alloc_pages", r"__rmqueue", r"rmqueue",
      r"vma_alloc_", r"folio_alloc", r"__folio_alloc", r"filemap_alloc_folio", r"pte_alloc_one",
      r"prep_new_page", r"post_alloc_hook", r"(try_to_)?compact_", r"(__)?mem_cgroup_",
      r"(try_)?charge_memcg", r"memcg1_", r"get_mem_cgroup_", r"page_counter_", r"obj_cgroup_",
      r"__memcg_kmem_", r"refill_stock", r"uncharge_", r"\w*free_pages", r"free_unref_",
      r"__free_", r"release_pages", r"folios_put", r"__folio_put", r"lru_", r"folio_batch",
      r"__folio_batch", r"folio_add_lru", r"__page_cache_release", r"zap_", r"unmap_", r"tlb_",
      r"__tlb_", r"flush_tlb", r"free_pgtables"]),
    ("kernel copy to user",
     "the kernel copying file data into (or out of) the process's memory",
     [r"_copy_to_iter", r"copy_page_to_iter", r"copy_folio_to_iter", r"_copy_to_user",
      r"copy_to_user", r"copy_user_", r"rep_movs_alternative", r"copyout", r"_copy_from_iter",
      r"copy_page_from_iter", r"_copy_from_user", r"copyin"]),
    ("page cache",
     "looking up, adding and reading ahead the file's pages in the page cache",
     [r"filemap_", r"__filemap_", r"page_cache_", r"readahead", r"ondemand_readahead",
      r"force_page_cache_ra", r"read_pages", r"xas_", r"__xas_", r"xa_", r"__xa_", r"find_get_",
      r"find_lock_", r"folio_wait_bit", r"next_uptodate_folio", r"workingset_"]),
    ("I/O submission and completion",
     "io_uring, the block layer, the device driver (virtio) and the file system's mapping of "
     "file offsets to blocks",
     [r"io_", r"__io_", r"__do_sys_io_uring", r"__x64_sys_io_uring", r"__sys_io_uring",
      r"\[liburing", r"tctx_task_work", r"kiocb_", r"blk_", r"__blk_", r"blkcg_", r"submit_bio",
      r"__submit_bio", r"bio_", r"__bio_", r"bvec_", r"virtio", r"virtqueue", r"virtblk_",
      r"vring_", r"vp_", r"iowrite", r"ioread", r"iomap_", r"__iomap_", r"\w*_dio_", r"ext4_",
      r"xfs_", r"btrfs_", r"dd_", r"elv_", r"__elv_", r"sbitmap_", r"__sbitmap", r"rq_qos_",
      r"__rq_qos_", r"sg_", r"__sg_", r"mpage_", r"__read_end_io", r"end_bio_", r"nvme_",
      r"scsi_", r"dma_"]),
    ("scheduling",
     "switching threads, waking them and balancing them across CPUs",
     [r"schedule", r"__schedule", r"preempt_schedule", r"finish_task_switch", r"pick_next_",
      r"__pick_next", r"try_to_wake_up", r"ttwu_", r"wake_up_", r"__wake_up", r"sched_",
      r"__sched", r"update_curr", r"update_sd_lb_stats", r"update_load_avg", r"enqueue_",
      r"dequeue_", r"context_switch", r"__switch_to", r"psi_", r"futex_", r"__futex",
      r"do_nanosleep", r"hrtimer_nanosleep"]),
    ("the strategy's copy",
     "memcpy/memmove in the worker: the strategy copying the bytes itself",
     [r"__mem(move|cpy|pcpy)\w*(@\S*)?$", r"mem(move|cpy)(@\S*)?$"]),
    ("the consumer",
     "what uses the weights once loaded: the checksum (XXH3) or forward's arithmetic",
     [r"XXH", r"loadbench::UsePipeline::Consume", r"loadbench::.*Consumer::"]),
    ("system calls (other)",
     "the rest of entering and leaving system calls, mapping and unmapping memory",
     [r"entry_SYSCALL", r"do_syscall_64", r"x64_sys_call", r"__x64_sys_", r"__do_sys_",
      r"__se_sys_", r"ksys_", r"syscall_", r"exit_to_user_mode", r"__rseq_", r"rseq_", r"vfs_",
      r"rw_verify_area", r"security_", r"bpf_lsm_", r"apparmor_", r"selinux_", r"__fdget",
      r"fdget", r"__fget", r"fget", r"fput", r"do_mmap", r"vm_mmap", r"__mmap_region",
      r"mmap_region", r"do_vmi_", r"vms_", r"__vm_munmap", r"do_munmap", r"do_madvise",
      r"madvise_", r"arch_do_signal", r"get_signal", r"kernel_clone", r"copy_process"]),
]
OTHER_KERNEL = "other kernel"
OTHER_USER = "other user"
WAITING = "waiting (off-CPU)"
# Every cause a sample can fall to, in the table's order; then the off-CPU rest.
NAMES = [name for name, _, _ in CAUSES] + [OTHER_KERNEL, OTHER_USER]
DESCRIPTIONS = {**{name: text for name, text, _ in CAUSES},
                OTHER_KERNEL: "a kernel function no cause above names, nor any of its callers",
                OTHER_USER: "the worker's own code that no cause above names (parsing, "
                            "setting up, a frame without a symbol)",
                WAITING: "each thread's time in the load less its on-CPU time, added up over "
                         "the threads: blocked on I/O, on a lock, or waiting for a CPU"}
_MATCHERS = [(name, re.compile("|".join(f"(?:{p})" for p in patterns)))
             for name, _, patterns in CAUSES]


def is_kernel(frame: str) -> bool:
    return frame.endswith("_[k]")


@functools.lru_cache(maxsize=None)
def frame_cause(frame: str) -> str | None:
    """The first cause of CAUSES whose patterns match the frame, None when none does."""
    for name, matcher in _MATCHERS:
        if matcher.match(frame):
            return name
    return None


def classify(frames) -> str:
    """The cause of one call chain (frames root first): the first frame from the leaf that
    names one; else other kernel or other user by the leaf."""
    for frame in reversed(frames):
        cause = frame_cause(frame)
        if cause:
            return cause
    return OTHER_KERNEL if frames and is_kernel(frames[-1]) else OTHER_USER


def read_folded(path: str) -> list[tuple[tuple[str, ...], int]]:
    """The (frames root first, samples) of each line of a folded file; ResultsError naming the
    file (and the line) when it cannot be read or a line is not `frame;...;frame COUNT`."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ResultsError(f"{path}: cannot read the profile ({e.strerror})") from None
    stacks = []
    for number, line in enumerate(lines, 1):
        chain, _, count = line.rpartition(" ")
        if not chain or not count.isdigit():
            raise ResultsError(f"{path}:{number}: not a folded call chain (frames joined by ';', "
                               f"a space, a sample count): {line[:80]!r}")
        stacks.append((tuple(chain.split(";")), int(count)))
    return stacks


def seconds(stacks, hz: float) -> pd.Series:
    """On-CPU seconds per cause (NAMES, zeros included) of one run's call chains."""
    counts = collections.Counter()
    for frames, n in stacks:
        counts[classify(frames)] += n
    return pd.Series([counts[name] / hz for name in NAMES], index=NAMES)


def waiting(profile: dict, wall_s: float, on_cpu_s: float) -> float:
    """A run's waiting: its threads' own, added up (`profile.waiting_s`); for a record without
    it, one thread's wall time less its on-CPU time, floored at 0."""
    recorded = profile.get("waiting_s")
    if isinstance(recorded, (int, float)) and not isinstance(recorded, bool):
        return float(recorded)
    return max(0.0, wall_s - on_cpu_s)


def profiled(results: Results) -> pd.DataFrame:
    """The ok runs with a profile, with `folded` (its file's path), `hz`, `shares_of` ("wall" or
    "cpu", "wall" for a record without it) and `threads` (None for a record without it)."""
    ok = results.ok
    profiles = ok["profile"] if "profile" in ok else pd.Series(None, index=ok.index, dtype=object)
    has = profiles.map(lambda p: isinstance(p, dict) and isinstance(p.get("folded"), str))
    taken = profiles[has.astype(bool)]
    return ok.loc[taken.index].assign(
        folded=[os.path.join(results.folder, p["folded"]) for p in taken],
        hz=[float(p["hz"]) for p in taken],
        shares_of=[p.get("shares_of") if p.get("shares_of") in ("wall", "cpu") else "wall"
                   for p in taken],
        threads=[p.get("threads") for p in taken])


def missing(results: Results) -> pd.DataFrame:
    """The runs, of any status, whose profile was asked for and not taken (`profile` null),
    with `profile_error`."""
    runs = results.runs
    if "profile_error" not in runs:
        return runs.iloc[0:0].assign(profile_error=None)
    return runs[runs["profile_error"].notna()]


def shown(results: Results) -> bool:
    """Whether a report needs the section: some ok run has a profile, or some run's profile
    could not be taken."""
    return not profiled(results).empty or not missing(results).empty


def run_seconds(run: pd.Series) -> pd.Series:
    """One profiled run's seconds per cause (NAMES) and its WAITING."""
    on_cpu = seconds(read_folded(run["folded"]), run["hz"])
    return pd.concat([on_cpu, pd.Series({WAITING: waiting(run["profile"], run["wall_s"],
                                                          on_cpu.sum())})])


def summarize(results: Results) -> pd.DataFrame:
    """One row per group of comparable ok runs (GROUP) that has a profile: strategy, n (its
    profiled runs), threads (the most any of them had), shares_of, wall_s and on_cpu_s (their
    means), the mean seconds of every cause (NAMES) and of WAITING, and run_id, the
    representative run (see the module's docstring)."""
    runs = profiled(results)
    columns = (GROUP + ["strategy", "n", "threads", "shares_of", "wall_s", "on_cpu_s"] + NAMES
               + [WAITING, "run_id"])
    rows = []
    for key, group in runs.groupby(GROUP, sort=False):
        per_run = pd.DataFrame([run_seconds(r) for _, r in group.iterrows()])
        everyone = results.ok[(results.ok[GROUP] == pd.Series(key, index=GROUP)).all(axis=1)]
        nearest = (group["wall_s"] - everyone["wall_s"].median()).abs().to_numpy().argmin()
        threads = group["threads"].dropna()
        rows.append({**dict(zip(GROUP, key)), "strategy": group["strategy"].iloc[0],
                     "n": len(group), "threads": int(threads.max()) if len(threads) else None,
                     "shares_of": "cpu" if (group["shares_of"] == "cpu").any() else "wall",
                     "wall_s": float(group["wall_s"].mean()),
                     "on_cpu_s": float(per_run[NAMES].sum(axis=1).mean()),
                     **per_run.mean().to_dict(), "run_id": group["run_id"].iloc[nearest]})
    return pd.DataFrame(rows, columns=columns)


def whole(row: pd.Series) -> float:
    """What a row of `summarize`'s table has shares of, in seconds: its CPU time (shares_of
    "cpu"), or its on-CPU time and its waiting, the wall time ("wall")."""
    return row["on_cpu_s"] + (row[WAITING] if row["shares_of"] == "wall" else 0.0)


def shares(table: pd.DataFrame) -> dict[tuple, dict]:
    """Per row of `summarize`'s table, its GROUP values -> `of` (its shares_of) and `shares`:
    each cause's seconds (and WAITING's, for shares of wall time) over `whole`, the causes with
    none left out. They add up to 1."""
    out = {}
    for _, r in table.iterrows():
        parts = NAMES + ([WAITING] if r["shares_of"] == "wall" else [])
        total = whole(r)
        out[tuple(r[GROUP])] = {
            "of": r["shares_of"],
            "shares": {c: float(r[c] / total) for c in parts if r[c] > 0 and total > 0}}
    return out


def flame(stacks) -> pd.DataFrame:
    """A flame graph's rectangles: one per distinct call path from the root (depth, start and
    samples in sample units, frame), the children of a frame side by side within it, the most
    sampled first."""
    root: dict = {"n": 0, "kids": {}}
    for frames, n in stacks:
        node = root
        for frame in frames:
            node = node["kids"].setdefault(frame, {"n": 0, "kids": {}})
            node["n"] += n
    rows, todo = [], [(root, -1, 0)]
    while todo:
        node, depth, start = todo.pop()
        for frame, kid in sorted(node["kids"].items(), key=lambda kv: -kv[1]["n"]):
            rows.append((depth + 1, start, kid["n"], frame))
            todo.append((kid, depth + 1, start))
            start += kid["n"]
    return pd.DataFrame(rows, columns=["depth", "start", "samples", "frame"])


def summary(table: pd.DataFrame, results: Results) -> dict:
    """summary.json's `causes` (per group: its GROUP, strategy, n, threads, shares_of, wall_s,
    on_cpu_s, waiting_s, the seconds of every cause, their `shares`, the representative run_id)
    and `profiles_missing`."""
    parts = shares(table)
    causes = [{**{c: r[c] for c in GROUP + ["strategy", "n", "threads", "shares_of", "wall_s",
                                            "on_cpu_s"]},
               "waiting_s": r[WAITING], "seconds": {c: r[c] for c in NAMES},
               "shares": parts[tuple(r[GROUP])]["shares"], "run_id": r["run_id"]}
              for _, r in table.iterrows()]
    gone = missing(results)
    return {"causes": causes,
            "profiles_missing": [{c: r[c] for c in ["run_id", "strategy_spec", "cache", "status",
                                                    "profile_error"]}
                                 for _, r in gone.iterrows()]}
