"""The JSON Schema of a runs.jsonl record (analysis/record.schema.json) and the analysis's own
checks (analysis/core/schema.py RECORD, `normalize`) are one truth: the shipped file is what
`schema.json_schema()` makes of RECORD, and a validator and `normalize` give the same answer on
every record of the fixtures and the reference results, and on each with one field given a
value of another type. (One difference is JSON Schema's own: its `integer` takes 3.0, which the
analysis reads as missing; the C++ writer writes integers without a fraction, and
harness/run/tests/test_record_schema.py validates what it writes.)"""

import glob
import json
import os

import pytest

from analysis.core import schema

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHIPPED = os.path.join(REPO, "analysis", "record.schema.json")
# Values of every JSON type but an integer-valued float (see the docstring).
JUNK = ["x", 2.5, 7, True, [1], {"k": 1}, None, [None], {"k": None}]


def records() -> list[dict]:
    """Every record of the fixtures' and the reference results' runs.jsonl."""
    out = []
    for path in sorted(glob.glob(os.path.join(REPO, "analysis", "tests", "fixtures", "**",
                                              "runs.jsonl"), recursive=True)
                       + glob.glob(os.path.join(REPO, "results", "**", "runs.jsonl"),
                                   recursive=True)):
        with open(path, encoding="utf-8") as f:
            out += [r for r in map(json.loads, f) if isinstance(r, dict)]
    return out


def accepted(record: dict) -> bool:
    """Whether the analysis reads the record whole: no field dropped, every REQUIRED one
    there."""
    found: list = []
    value = schema.normalize(record, schema.RECORD, found)
    return not found and all(value.get(k) is not None for k in schema.REQUIRED)


def test_the_shipped_schema_is_the_one_made_from_the_analysis_fields():
    with open(SHIPPED, encoding="utf-8") as f:
        shipped = json.load(f)
    assert shipped == schema.json_schema(), (
        "analysis/record.schema.json differs from analysis/core/schema.py's RECORD: write it "
        "again with `/usr/bin/python3 -m analysis.core.schema > analysis/record.schema.json`")


def mutants(record: dict):
    """The record with one field of RECORD (or of one of its objects) given each JUNK value."""
    for key, spec in schema.RECORD.items():
        for junk in JUNK:
            yield {**record, key: junk}
        if isinstance(spec, dict):
            inner = [k for k in spec if k != "*"] or ["some_key"]
            for sub in inner[:3]:
                for junk in JUNK:
                    yield {**record, key: {sub: junk}}


def test_a_validator_and_the_analysis_agree_on_every_record_and_its_mutants():
    jsonschema = pytest.importorskip(
        "jsonschema", reason="python3-jsonschema is not installed (scripts/setup.sh installs it)")
    validator = jsonschema.Draft202012Validator(schema.json_schema())
    jsonschema.Draft202012Validator.check_schema(schema.json_schema())
    found = records()
    assert len(found) > 100
    for record in found:
        assert validator.is_valid(record) and accepted(record), record
    checked = 0
    for record in found[::max(1, len(found) // 12)]:
        for m in mutants(record):
            assert validator.is_valid(m) == accepted(m), (
                m, [e.message for e in validator.iter_errors(m)])
            checked += 1
    assert checked > 1000
    # The fields every table needs are required, and not null.
    bare = {"strategy": "fread", "cache": "cold", "status": "ok", "file": "/f"}
    assert validator.is_valid(bare)
    for key in bare:
        assert not validator.is_valid({k: v for k, v in bare.items() if k != key})
        assert not validator.is_valid({**bare, key: None})
    assert not validator.is_valid({**bare, "cache": "lukewarm"})
