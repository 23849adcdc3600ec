"""trim keeps a results folder's records and profiles whole and thins its timelines, first and
last row kept."""

import os
import shutil

import pandas as pd

from analysis.pages import trim

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "small")


def test_timelines_are_thinned_and_records_kept(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURE, src)
    (src / "timelines").mkdir()
    pd.DataFrame({"t_s": [i / 100 for i in range(1000)], "rss_bytes": range(1000)}).to_csv(
        src / "timelines" / "t-0000.csv", index=False)
    assert trim.trim(str(src), str(tmp_path / "dst"), 200) == 1
    t = pd.read_csv(tmp_path / "dst" / "timelines" / "t-0000.csv")
    assert len(t) == 200
    assert t["rss_bytes"].iloc[0] == 0 and t["rss_bytes"].iloc[-1] == 999
    assert t["t_s"].is_monotonic_increasing
    assert (tmp_path / "dst" / "runs.jsonl").read_text() == (src / "runs.jsonl").read_text()
    assert not (tmp_path / "dst" / "adaptive.json").exists()  # the fixture has none


def test_the_adaptive_stop_record_is_kept(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURE, src)
    (src / "adaptive.json").write_text('{"rounds": 9, "stopped": "target met"}')
    trim.trim(str(src), str(tmp_path / "dst"), 200)
    assert (tmp_path / "dst" / "adaptive.json").read_text() == (src / "adaptive.json").read_text()


def test_the_profiles_are_kept_whole(tmp_path):
    src = os.path.join(os.path.dirname(__file__), "fixtures", "profiles")
    trim.trim(src, str(tmp_path / "dst"), 200)
    names = sorted(os.listdir(os.path.join(src, "profiles")))
    assert sorted(os.listdir(tmp_path / "dst" / "profiles")) == names
    with open(os.path.join(src, "profiles", names[0])) as f:
        assert (tmp_path / "dst" / "profiles" / names[0]).read_text() == f.read()
