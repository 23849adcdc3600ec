"""One front door: the analysis subcommands (`loadbench report|compare|machines|gate|advise`) run
`python3 -m analysis.NAME` from the tool's home whatever the working folder, every argument and
the exit code passed through; run and experiment end with the report (unless told not to),
experiments go into a fresh folder and `--resume` finds the one to go on with, a strategy's spec
may be its table's name, `--help` fits the width it is given and the completion script is bash.

Run with /usr/bin/python3 -m pytest harness/run/tests/test_front_door.py; LOADBENCH_BIN names
the binary (default build/loadbench of this checkout)."""
import glob
import os
import re
import shutil
import subprocess

import pytest
from conftest import BIN, REPO

FIXTURE = os.path.join(REPO, "analysis", "tests", "fixtures", "small")
SUBCOMMANDS = ["", "gen", "inspect", "run", "experiment", "list", "cache", "probe", "lock",
               "system", "system tune", "serve", "put", "completion"]

TINY = """# Question: does the front door work?
name = "tiny"
reps = 2
cache = "warm"

[[file]]
preset = "llama"
size = "1MiB"

[[strategy]]
name = "{name}"
"""


def lb(env, *args, cwd=None, timeout=120):
    return subprocess.run([BIN, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=timeout)


def one_line(p):
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


@pytest.fixture
def reporting(env):
    """The environment, with the report at the end of a run (the suite turns it off)."""
    e = dict(env)
    e.pop("LOADBENCH_NO_REPORT", None)
    e.pop("LOADBENCH_HOME", None)
    return e


@pytest.fixture
def fake_home(tmp_path):
    """A home whose analysis modules say what they were given (argv, PYTHONPATH, LOADBENCH_BIN)
    into said.txt and exit with the code in their first argument's `exit=N`, else 0."""
    home = tmp_path / "home"
    (home / "analysis").mkdir(parents=True)
    (home / "analysis" / "__init__.py").write_text("")
    body = ("import json, os, sys\n"
            "open(os.path.join(os.environ['SAID'], 'said.txt'), 'a').write(json.dumps(\n"
            "    {'module': __name__, 'argv': sys.argv[1:], 'cwd': os.getcwd(),\n"
            "     'path': os.environ.get('PYTHONPATH'), 'bin': os.environ.get('LOADBENCH_BIN')})"
            " + '\\n')\n"
            "codes = [a[5:] for a in sys.argv[1:] if a.startswith('exit=')]\n"
            "sys.exit(int(codes[0]) if codes else int(os.environ.get('FAKE_EXIT', '0')))\n")
    for name in ("report", "gate"):
        (home / "analysis" / f"{name}.py").write_text(body)
    return str(home)


def said(tmp_path):
    import json
    with open(tmp_path / "said.txt") as f:
        return [json.loads(line) for line in f]


def test_report_runs_the_analysis_from_any_working_folder(tmp_path, reporting):
    folder = tmp_path / "small"
    shutil.copytree(FIXTURE, folder)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = lb(dict(reporting, PYTHONPATH=""), "report", str(folder), "--brief", cwd=elsewhere)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"report: {folder}/report.html"), p.stdout
    assert (folder / "report.html").exists() and (folder / "summary.json").exists()
    # --help is the module's own.
    h = lb(reporting, "report", "--help", cwd=elsewhere)
    assert h.returncode == 0 and "usage: analysis.report" in h.stdout, h.stdout + h.stderr
    # A folder that is not one: the module's exit code, whatever it is.
    direct = subprocess.run(["/usr/bin/python3", "-m", "analysis.report", str(tmp_path / "none")],
                            capture_output=True, text=True, cwd=REPO)
    bad = lb(reporting, "report", str(tmp_path / "none"), cwd=elsewhere)
    assert bad.returncode == direct.returncode != 0, bad.stderr


def test_every_argument_and_the_exit_code_pass_through(tmp_path, reporting, fake_home):
    env = dict(reporting, LOADBENCH_HOME=fake_home, SAID=str(tmp_path), PYTHONPATH="/x")
    p = lb(env, "gate", "exit=5", "--help", "--reps", "a b", cwd=tmp_path)
    assert p.returncode == 5, p.stderr
    [s] = said(tmp_path)
    assert s["module"] == "__main__" and s["argv"] == ["exit=5", "--help", "--reps", "a b"]
    assert s["cwd"] == str(tmp_path)
    assert s["path"] == f"{os.path.realpath(fake_home)}:/x"
    assert os.path.samefile(s["bin"], BIN)


def test_a_home_that_is_not_one_is_one_line_and_exit_2(tmp_path, reporting):
    p = lb(dict(reporting, LOADBENCH_HOME=str(tmp_path)), "compare", "a", "b")
    assert p.returncode == 2
    assert f"LOADBENCH_HOME={tmp_path}: no analysis/__init__.py there" in one_line(p)


def test_bad_input_is_one_line_and_exit_2(tmp_path, env, model):
    p = lb(env, "run", "--file", model, "--export", "xls", "t.xls", "--out", str(tmp_path / "r"))
    assert p.returncode == 2
    assert "--export xls t.xls: the format is csv, md or json" in one_line(p)
    assert not (tmp_path / "r").exists()
    p = lb(env, "experiment", "no-such-experiment", cwd=tmp_path)
    assert p.returncode == 2
    assert "no-such-experiment: no such file, nor an experiment of " in one_line(p)
    assert "quick" in one_line(p)
    p = lb(env, "experiment", "x.toml", "--export", "csv")
    assert p.returncode == 2 and one_line(p).startswith("loadbench: --export")


def test_run_ends_with_the_report_and_its_failure_is_exit_1(tmp_path, reporting, model,
                                                           fake_home):
    args = ["run", "--file", model, "--strategies", "fread", "--cache", "warm", "--reps", "1"]
    p = lb(reporting, *args, "--out", str(tmp_path / "a"))
    assert p.returncode == 0, p.stderr
    assert f"report: {tmp_path}/a/report.html" in p.stdout
    assert (tmp_path / "a" / "report.html").exists()
    p = lb(reporting, *args, "--out", str(tmp_path / "b"), "--no-report")
    assert p.returncode == 0 and not (tmp_path / "b" / "report.html").exists()
    p = lb(dict(reporting, LOADBENCH_NO_REPORT="1"), *args, "--out", str(tmp_path / "c"))
    assert p.returncode == 0 and not (tmp_path / "c" / "report.html").exists()
    # A report that fails: exit 1, said, the runs kept; --export passed on to it. From the
    # checkout, whose analysis/ is not the home's.
    env = dict(reporting, LOADBENCH_HOME=fake_home, SAID=str(tmp_path), FAKE_EXIT="3")
    p = lb(env, *args, "--out", str(tmp_path / "d"), "--export", "csv", str(tmp_path / "t.csv"),
           cwd=REPO)
    assert p.returncode == 1, p.stderr
    assert "the report failed (exit 3, above)" in p.stderr
    assert f"write it again with: loadbench report {tmp_path}/d" in p.stderr
    [s] = said(tmp_path)
    assert s["argv"] == [str(tmp_path / "d"), "--brief", "--export", "csv",
                         str(tmp_path / "t.csv")]
    assert len(open(tmp_path / "d" / "runs.jsonl").readlines()) == 1


def test_run_has_6_rounds_by_default(tmp_path, env, model):
    p = lb(env, "run", "--file", model, "--dry-run", "--out", str(tmp_path / "r"))
    assert p.returncode == 0, p.stderr
    assert "reps: 6;" in p.stdout, p.stdout
    assert "runs: 36 planned" in p.stdout, p.stdout  # 3 strategies, cold and warm, 6 rounds
    assert not (tmp_path / "r").exists()


def test_an_experiment_goes_into_a_fresh_folder_and_resume_finds_it(tmp_path, env):
    toml = tmp_path / "tiny.toml"
    toml.write_text(TINY.format(name="fread"))
    args = ["experiment", str(toml), "--data", str(tmp_path / "data"), "--no-report"]
    p = lb(env, *args, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    [folder] = glob.glob(str(tmp_path / "results" / "tiny-*"))
    assert re.fullmatch(r"tiny-\d{8}-\d{6}", os.path.basename(folder))
    runs = open(os.path.join(folder, "runs.jsonl")).readlines()
    assert len(runs) == 2
    # Without --resume, a folder that holds runs is refused, naming --resume.
    p = lb(env, *args, "--out", folder, cwd=tmp_path)
    assert p.returncode == 2
    assert f"{os.path.relpath(folder, tmp_path)} already holds runs" in one_line(p)
    assert "give --resume" in one_line(p)
    # An interrupted one (a run missing): --resume alone finds it and says so.
    with open(os.path.join(folder, "runs.jsonl"), "w") as f:
        f.write(runs[0])
    p = lb(env, *args, "--resume", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rel = os.path.relpath(folder, tmp_path)
    assert f"resuming {rel}, the newest incomplete results/tiny-* (1 of 2 runs recorded)" in p.stderr
    assert len(open(os.path.join(folder, "runs.jsonl")).readlines()) == 2
    # Complete now: nothing left to resume.
    p = lb(env, *args, "--resume", cwd=tmp_path)
    assert p.returncode == 2
    assert "no results/tiny-* folder holds an incomplete run of tiny" in one_line(p)


def test_an_experiment_by_name_from_another_folder(tmp_path, env):
    p = lb(env, "experiment", "quick", "--dry-run", "--data", str(tmp_path / "data"),
           cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "reps: 6;" in p.stdout and "results/quick-" in p.stdout, p.stdout


def test_a_spec_in_a_strategys_name_is_read_and_a_bad_one_refused(tmp_path, env):
    toml = tmp_path / "tiny.toml"
    toml.write_text(TINY.format(name="fread:chunk=1MiB"))
    p = lb(env, "experiment", str(toml), "--data", str(tmp_path / "data"), "--dry-run")
    assert p.returncode == 0, p.stderr
    assert "  fread:chunk=1MiB\n" in p.stdout, p.stdout
    toml.write_text(TINY.format(name="fread:chunk=1MiB") + 'chunk = "4MiB"\n')
    p = lb(env, "experiment", str(toml), "--dry-run")
    assert p.returncode == 2
    assert "option chunk is given twice, differently: 1MiB in name" in one_line(p)


@pytest.mark.parametrize("columns", [None, "60"])
def test_help_fits_the_width(columns):
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    if columns:
        env["COLUMNS"] = columns
    width = int(columns or 100)
    for sub in SUBCOMMANDS:
        p = subprocess.run([BIN, *sub.split(), "--help"], capture_output=True, text=True, env=env)
        assert p.returncode == 0, (sub, p.stderr)
        wide = [line for line in p.stdout.splitlines() if len(line) > width]
        assert not wide, f"loadbench {sub} --help: {len(wide)} lines over {width}: {wide[:3]}"
        if sub not in ("", "system"):
            assert "\nExamples:\n  loadbench " in p.stdout or sub == "completion", sub
    top = subprocess.run([BIN, "--help"], capture_output=True, text=True, env=env).stdout
    for name in ("report", "compare", "machines", "gate", "advise", "completion"):
        assert re.search(rf"^  {name} ", top, re.M), name


def test_the_completion_script_is_bash_and_completes(tmp_path):
    script = tmp_path / "loadbench.bash"
    p = subprocess.run([BIN, "completion", "bash"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    script.write_text(p.stdout)
    subprocess.run(["bash", "-n", str(script)], check=True)

    def complete(*words):
        line = " ".join(f"'{w}'" for w in words)
        out = subprocess.run(
            ["bash", "-c", f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1};"
             " _loadbench; printf '%s\\n' \"${COMPREPLY[@]}\""],
            capture_output=True, text=True, check=True).stdout
        return out.split()

    assert complete("loadbench", "ru") == ["run"]
    assert set(complete("loadbench", "")) >= {"run", "experiment", "report", "completion"}
    assert "worker" not in complete("loadbench", "")
    assert complete("loadbench", "run", "--re") == ["--reps", "--resume"]
    assert complete("loadbench", "system", "t") == ["tune"]
    assert "--page-reporting" in complete("loadbench", "system", "tune", "--")
    assert complete("loadbench", "run", "--file", "") == []  # a value: file names
