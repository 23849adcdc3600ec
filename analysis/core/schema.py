"""The fields of a results folder the analysis reads, and their types: what results.load checks
every file against, so that no module meets a value of another shape than the format says
(docs/results-format.md, "Reading older or damaged folders").

A spec is a kind (NUMBER, INTEGER, TEXT, BOOLEAN, SCALAR, OBJECT, LIST), a tuple of kinds (any
of them), a frozenset (one of these strings), a dict (an object whose listed keys follow their
specs; "*" stands for every key; keys not listed are kept unchecked) or a one-item list (a list
whose every item follows that spec).
`normalize` gives a value with every checked field of the right type: null stays null (not
measured), a field of the wrong type is dropped as if it were absent and noted as (field, what),
and so is an object or list found null, so that `env.get("probe", {})` is always an object.
"""

from __future__ import annotations

import json

NUMBER = "a number"
INTEGER = "an integer"
TEXT = "a string"
BOOLEAN = "true or false"
SCALAR = "a string, number or true/false"  # a figure only shown as text
OBJECT = "an object"
LIST = "a list"

_KINDS = {
    NUMBER: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    INTEGER: lambda v: isinstance(v, int) and not isinstance(v, bool),
    TEXT: lambda v: isinstance(v, str),
    BOOLEAN: lambda v: isinstance(v, bool),
    SCALAR: lambda v: isinstance(v, (str, int, float, bool)),
    OBJECT: lambda v: isinstance(v, dict),
    LIST: lambda v: isinstance(v, list),
}
MISSING = object()  # what normalize gives for a value of the wrong type

# The fields of runs.jsonl a record cannot do without: every table groups by them.
REQUIRED = ["strategy", "cache", "status", "file"]
_SECONDS = ["wall_s", "ready_s", "first_use_s", "open_s", "transform_s", "bind_s", "consume_s",
            "verify_s", "teardown_s", "process_s", "user_s", "sys_s", "load_user_s",
            "load_sys_s", "settle_s"]
_COUNTS = ["peak_rss_bytes", "start_rss_bytes", "anon_huge_bytes", "major_faults",
           "minor_faults", "load_major_faults", "load_minor_faults", "read_bytes",
           "resident_before", "resident_after", "worst_shard_resident", "file_bytes",
           "tensor_bytes", "tensor_count", "ceiling_bytes", "gb_per_s",
           "server_resident_before", "server_cpu_s", "mount_cpu_s", "link_rx_bytes",
           # The bytes a reader needed (its part); a cluster node's NIC counters over the run.
           "needed_bytes", "nic_rx_bytes", "nic_tx_bytes",
           # A made storage's block device over the run (/sys/block/NAME/stat, read side).
           "device_reads", "device_read_bytes", "device_read_merges", "device_read_ms",
           "device_queue_ms", "device_request_bytes", "device_reads_per_s"]
RECORD = {
    **{k: TEXT for k in ["strategy", "status", "file", "run_id", "experiment", "strategy_spec",
                         "error", "verify", "label", "after", "pattern", "host", "timeline",
                         "profile_error", "started_at", "ended_at", "read_as", "link",
                         "strategy_flags",
                         # A cluster run's [cluster] rates, as the experiment wrote them.
                         "nic", "uplink",
                         # The label of the storage the tool made for the run (absent: `here`).
                         "storage"]},
    # session: a cluster run's index into env.json `sessions`, whose `cluster` it ran on.
    **{k: INTEGER for k in ["rep", "position", "procs", "proc", "rank", "ranks", "nodes",
                            "memory_limit_bytes", "session"]},
    **{k: NUMBER for k in _SECONDS + _COUNTS},
    "cache": frozenset({"cold", "warm"}),  # a run of another is in no table
    "checksum_ok": BOOLEAN,
    "warnings": [TEXT],
    "command": (LIST, TEXT),
    "params": {"*": SCALAR},
    "use": {"*": SCALAR},
    "details": {"role": TEXT, "etag": TEXT, "requests": NUMBER, "connections": NUMBER,
                "bytes_requested": NUMBER, "bytes_received": NUMBER, "first_byte_s": NUMBER,
                "request_latency_s": {"*": NUMBER},
                # A link ceiling's (iperf3): what its receiver and sender counted.
                "receiver_bits_per_s": NUMBER, "sender_bits_per_s": NUMBER,
                "retransmits": NUMBER,
                # A fleet node's (loaders/strategies/fleet.cc): what analysis/fleet.py reads.
                "design": TEXT, "node": INTEGER, "nodes": INTEGER, "ready_s": NUMBER,
                "store_bytes": NUMBER, "peer_rx_bytes": NUMBER, "peer_tx_bytes": NUMBER,
                "store_requests": NUMBER, "connect_s": NUMBER},
    "memory": {"*": NUMBER},
    "device": {"*": NUMBER},
    "exec": {"timed": frozenset({"command", "region"}), "command_s": NUMBER,
             "ready_s": NUMBER, "done_s": NUMBER, "startup_s": NUMBER,
             "stderr_tail": (TEXT, LIST), "measured": TEXT},
    "profile": {"folded": TEXT, "hz": NUMBER, "threads": INTEGER,
                "shares_of": frozenset({"wall", "cpu"}), "waiting_s": NUMBER},
    "ceiling_recipes": {"*": {"gb_per_s": NUMBER, "reason": SCALAR}},
}
# The fields of a record that are no object: a column each, null where a record has none.
COLUMNS = [k for k, spec in RECORD.items() if not isinstance(spec, dict)]

_CEILING = {"gb_per_s": NUMBER, "median_gb_per_s": NUMBER, "reps_gb_per_s": [NUMBER],
            "us_per_fault": NUMBER, "reason": SCALAR}
_STABILITY = {
    **{k: NUMBER for k in ["window_s", "max_wait_s", "waited_s", "dirty_bytes",
                           "writeback_bytes", "mem_available_bytes", "mem_total_bytes",
                           "swap_total_bytes", "swap_used_bytes"]},
    "settled": BOOLEAN, "waited_for": SCALAR,
    "busy": {"cpu_percent": NUMBER, "runnable": NUMBER, "io_in_flight": NUMBER},
    "cores": SCALAR, "loadavg": [NUMBER], "warnings": [SCALAR],
    "busy_processes": [{"comm": SCALAR, "cpu_percent": NUMBER}],
    "khugepaged": {"pages_collapsed_delta": NUMBER, "cpu_percent": NUMBER},
}
_FILE = {"path": TEXT, "tensor_bytes": INTEGER}
# A storage the tool made for the runs (harness/storage/storage.h's Env), with its own probe:
# the device figures of env.json's `probe` (`ceilings`), each request size's read and the most
# reads per second it sustained (`iops`).
_STORAGE = {"kind": TEXT, "label": TEXT, "options": OBJECT,
            "device_class": {"preset": SCALAR, "read_bps": NUMBER, "read_iops": NUMBER},
            "loop": {"device": SCALAR, "dio": SCALAR, "read_ahead_kb": NUMBER,
                     "max_sectors_kb": NUMBER, "backing": SCALAR},
            "fs": SCALAR, "mkfs": OBJECT, "mount_options": SCALAR, "bytes": NUMBER,
            "made_s": NUMBER,
            "probe": {"ceilings": {"*": _CEILING}, "iops": NUMBER,
                      "requests": [{"request_bytes": NUMBER, "gb_per_s": NUMBER,
                                    "iops": NUMBER}]}}
_END = {"dev": SCALAR, "address": SCALAR, "mtu": NUMBER}
# A shaped link (veth pair into a network namespace, tc TBF): what analysis/stats/link.py shows.
# A cluster on one machine (harness/net/cluster.h): what analysis/fleet.py reads.
_CLUSTER = {"nodes": INTEGER, "nic": TEXT, "uplink": TEXT, "nic_bits_per_s": NUMBER,
            "uplink_bits_per_s": NUMBER, "cores": NUMBER,
            "links": [{"name": TEXT, "rate": TEXT, "bits_per_s": NUMBER,
                       "iperf3": {"down_bits_per_s": NUMBER, "up_bits_per_s": NUMBER}}]}
_LINK = {"rates": [TEXT], "netns": SCALAR, "client": _END, "server": _END, "shaping": SCALAR,
         "rtt_ms": {"median": NUMBER, "min": NUMBER, "max": NUMBER},
         "delay": {"asked": SCALAR, "applied": BOOLEAN, "why": SCALAR},
         "tc": OBJECT, "iperf3": {"program": SCALAR, "version": SCALAR}}
ENV = {
    "experiment": TEXT,
    "root": SCALAR,
    "loadbench": {"version": SCALAR, "commit": SCALAR},
    "host": {"cpu_model": SCALAR, "cores": SCALAR, "memory_bytes": NUMBER},
    "kernel": {"release": SCALAR},
    "virtualization": {"hypervisor_flag": SCALAR, "free_page_reporting": SCALAR},
    "storage": {k: SCALAR for k in ["device", "driver", "model", "rotational", "scheduler",
                                    "read_ahead_kb", "max_sectors_kb"]},
    "storages": [_STORAGE],
    "filesystem": {"type": SCALAR, "source": SCALAR, "mount_options": SCALAR},
    "thp": {"enabled": SCALAR, "defrag": SCALAR},
    "memory": {"swap_total_bytes": NUMBER},
    "probe": {"ceilings": {"*": _CEILING}},
    "gpu": {"available": SCALAR, "reason": SCALAR,
            "device": {"memory_bytes": NUMBER, **{k: SCALAR for k in [
                "name", "compute_capability", "driver_version", "runtime_version",
                "pci_bus_id"]}}},
    "profile": {"call_chains": SCALAR},
    "rounds": {"order": TEXT, "baseline": TEXT, "ceiling": SCALAR, "seed": SCALAR,
               "reps": SCALAR,
               "auto": {"target": NUMBER, "budget_s": NUMBER, "min_rounds": SCALAR,
                        "max_rounds": SCALAR}},
    "stability": _STABILITY,
    # Each session's own cluster: a resumed cluster experiment makes and measures it again.
    "sessions": [{"started_at": SCALAR, "stability": _STABILITY, "system_tuned": BOOLEAN,
                  "cluster": _CLUSTER}],
    "system": {"tuned": BOOLEAN, "page_reporting": TEXT, "damon_pageout": TEXT,
               "not_tuned_because": [TEXT], "tune": {"by": TEXT, "page_reporting": TEXT}},
    "file": _FILE,
    "files": [_FILE],
    "experiment_file": {"question": TEXT},
    "link": _LINK,
    "cluster": _CLUSTER,  # the latest session's
}
ADAPTIVE = {
    "target": NUMBER, "budget_s": NUMBER, "elapsed_s": NUMBER,
    **{k: SCALAR for k in ["min_rounds", "max_rounds", "rounds", "met", "stopped"]},
    "comparisons": [{
        **{k: NUMBER for k in ["memory_limit_bytes", "ratio", "low", "high", "half_width"]},
        "procs": INTEGER, "file": TEXT, "cache": TEXT, "pattern": TEXT, "storage": TEXT,
        **{k: SCALAR for k in ["strategy_spec", "baseline", "n", "met"]}}],
}


def describe(spec) -> str:
    if isinstance(spec, frozenset):
        return "one of " + ", ".join(map(json.dumps, sorted(spec)))
    if isinstance(spec, dict):
        return OBJECT
    if isinstance(spec, list):
        return LIST
    return " or ".join(spec) if isinstance(spec, tuple) else spec


def shown(value, most: int = 40) -> str:
    """A value as JSON on one line, cut to `most` characters."""
    text = json.dumps(value)
    return text if len(text) <= most else text[:most - 1] + "…"


def _is_container(spec) -> bool:
    return isinstance(spec, (dict, list))


def _fits(value, spec) -> bool:
    """Whether a value fits a spec that is no object and no list."""
    if isinstance(spec, frozenset):
        return isinstance(value, str) and value in spec
    return any(_KINDS[k](value) for k in (spec if isinstance(spec, tuple) else (spec,)))


def normalize(value, spec, found: list, field: str = ""):
    """`value` with every field `spec` checks of the right type; MISSING when `value` itself is
    not; each field dropped is appended to `found` as (field, what was wrong)."""
    if value is None:
        return None
    if isinstance(spec, dict) and isinstance(value, dict):
        return _object(value, spec, found, field)
    if isinstance(spec, list) and isinstance(value, list):
        items = [normalize(v, spec[0], found, f"{field}[{i}]") for i, v in enumerate(value)]
        nulls = [i for i, v in enumerate(items) if v is None and _is_container(spec[0])]
        if nulls:  # noted here: normalize(None) notes nothing, null being "not measured"
            found.append((f"{field}[{nulls[0]}]", f"expected {describe(spec[0])}, got null"))
        return MISSING if nulls or any(i is MISSING for i in items) else items
    if not _is_container(spec) and _fits(value, spec):
        return value
    found.append((field, f"expected {describe(spec)}, got {shown(value)}"))
    return MISSING


def _object(value: dict, spec: dict, found: list, field: str) -> dict:
    out = dict(value)
    for key, item in value.items():
        sub = spec.get(key, spec.get("*"))
        if sub is None:
            continue
        checked = normalize(item, sub, found, f"{field}.{key}" if field else key)
        if checked is MISSING or (checked is None and _is_container(sub)):
            del out[key]
        else:
            out[key] = checked
    return out


# The JSON Schema of one runs.jsonl record, as analysis/record.schema.json ships it: made from
# RECORD and REQUIRED, so that the analysis's checks and the schema other tools validate with
# are one truth (analysis/tests/test_record_schema.py fails where the file and `json_schema`
# differ, and holds `normalize` and a validator to the same answers; the C++ writer's records
# are validated against the file by harness/run/tests/test_record_schema.py).
JSON_TYPES = {NUMBER: ["number"], INTEGER: ["integer"], TEXT: ["string"], BOOLEAN: ["boolean"],
              SCALAR: ["string", "number", "boolean"], OBJECT: ["object"], LIST: ["array"]}
SCHEMA_ID = "urn:loadbench:runs.jsonl:record"


def _json_types(spec) -> list[str]:
    kinds = spec if isinstance(spec, tuple) else (spec,)
    return [t for k in kinds for t in JSON_TYPES[k]]


def spec_schema(spec, nullable: bool = True) -> dict:
    """One spec as a JSON Schema; null allowed (`nullable`: not measured) as `normalize`
    allows it, but for an item of a list that is an object or a list."""
    if isinstance(spec, frozenset):
        return {"enum": sorted(spec) + ([None] if nullable else [])}
    if isinstance(spec, dict):
        out = {"type": ["object", "null"] if nullable else "object",
               "properties": {k: spec_schema(v) for k, v in spec.items() if k != "*"}}
        if "*" in spec:
            out["additionalProperties"] = spec_schema(spec["*"])
        return out
    if isinstance(spec, list):
        return {"type": ["array", "null"] if nullable else "array",
                "items": spec_schema(spec[0], not _is_container(spec[0]))}
    types = _json_types(spec) + (["null"] if nullable else [])
    return {"type": types if len(types) > 1 else types[0]}


def json_schema() -> dict:
    """A runs.jsonl record (docs/results-format.md) as JSON Schema draft 2020-12: the fields
    of RECORD with their types, null for any (not measured) but the REQUIRED ones, which must
    be there; every other key is allowed, unchecked, as the analysis keeps it."""
    record = spec_schema(RECORD, nullable=False)
    for name in REQUIRED:
        record["properties"][name] = spec_schema(RECORD[name], nullable=False)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "title": "loadbench run record (one line of runs.jsonl)",
            "description": "The fields loadbench's analysis reads and their types "
                           "(analysis/core/schema.py RECORD; every key and its meaning: "
                           "docs/results-format.md). Null is 'not measured'; keys not listed "
                           "are allowed.",
            **record, "required": list(REQUIRED)}


if __name__ == "__main__":
    # `/usr/bin/python3 -m analysis.core.schema > analysis/record.schema.json` writes the file.
    print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
