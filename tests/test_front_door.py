"""The front door's limits: a README a newcomer reads in minutes, a short Makefile, no lab diary in code."""

from __future__ import annotations

import os
import re
import subprocess

from wmrl.provenance import REPO

# Dates and issue numbers belong in git log and generated files, not in the package, README or Makefile.
DIARY = re.compile(r"20[0-9]{2}-[0-9]{2}-[0-9]{2}|issue [0-9]+|formerly|used to be|kept for comparison|was first run|"
                   r"amendment", re.IGNORECASE)


def _tracked(*paths: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", *paths], cwd=REPO, capture_output=True, text=True, check=True)
    return [p for p in out.stdout.splitlines() if (REPO / p).is_file()]


def test_the_readme_is_at_most_250_lines_and_2000_words_and_shows_what_it_promises():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 250 and len(text.split()) <= 2000, (len(text.splitlines()), len(text.split()))
    order = ["## First look", "## Where the method lives", "## Results at a glance", "## Commands", "## The notebooks",
             "## Extending", "## Scope and departures from the paper"]
    assert [text.index(h) for h in order] == sorted(text.index(h) for h in order)
    for link in re.findall(r"\]\(((?:docs|notebooks|figures)/[^)#]+)\)", text):
        assert (REPO / link).exists(), f"the README links to {link}, which is not there"


def test_the_readmes_first_command_comes_within_40_lines_with_what_it_prints_writes_and_takes():
    """A newcomer predicts the first look: the command, its run counter's lines, its folder and its time, which is
    the first look's runs' recorded time (results/timings.json), before any table of results."""
    import json

    from wmrl import reproduce

    head = "\n".join((REPO / "README.md").read_text().splitlines()[:40])
    assert "```bash\nmake reproduce-quick\n```" in head and "program analysis" in head
    assert f"=== 01_main_table (notebook 2 of {len(reproduce.FIRST_LOOK)}" in head and "[runs] training untrained seed 0 (1 of " in head
    assert "results/runs/small-seeds0/" in head and "| claim |" not in head
    quick = json.loads(reproduce.TIMINGS.read_text())["quick"]
    assert f"{quick['runs']} runs at seed 0" in head and f"{round(quick['train_s'] / 60)} min on 2 cores" in head


def test_the_first_look_trains_the_notebooks_wmrl_reproduce_names():
    from wmrl import reproduce

    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    line = subprocess.run(["make", "--no-print-directory", "-n", "reproduce-quick"], cwd=REPO, env=env,
                          capture_output=True, text=True, check=True).stdout.splitlines()[-1]
    assert line.endswith(f"--only {' '.join(reproduce.FIRST_LOOK)} --seeds 0")


def test_the_makefile_is_at_most_80_lines():
    assert len((REPO / "Makefile").read_text().splitlines()) <= 80


def test_no_dates_issue_numbers_or_history_in_the_package_the_notebooks_the_readme_or_the_makefile():
    found = []
    for path in _tracked("wmrl", "notebooks", "README.md", "Makefile"):
        if not path.endswith((".py", ".md", ".toml", ".yaml", ".yml", ".txt")) and path != "Makefile":
            continue
        for n, line in enumerate((REPO / path).read_text().splitlines(), 1):
            if DIARY.search(line):
                found.append(f"{path}:{n}: {line.strip()[:100]}")
    assert not found, "\n".join(found)


def test_no_function_of_the_package_is_longer_than_80_lines():
    import ast

    long = [f"{path}: {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path in _tracked("wmrl") if path.endswith(".py")
            for node in ast.walk(ast.parse((REPO / path).read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80]
    assert not long, "\n".join(long)


def test_the_reference_docs_stay_about_7000_words():
    words = sum(len((REPO / path).read_text().split()) for path in _tracked("docs") if path.endswith(".md"))
    assert words <= 7350, f"docs/ holds {words} words; keep it to what a user needs, about 7,000"


def test_the_diary_pattern_finds_what_it_should():
    assert DIARY.search("written 2026-12-02, not yet run") and DIARY.search("as Issue 13 asked")
    assert DIARY.search("formerly the dial") and DIARY.search("the Amendment of the design")
    assert not DIARY.search("seed 2026 and 12 steps") and not DIARY.search("the issue is the budget")


def test_the_first_looks_time_and_report_in_the_readme_are_the_measured_ones():
    """The heading's minutes and the example's notebook rows are those of the last timed first look from a fresh
    clone (``python -m bench.first_look``, results/bench/first_look.json) of the first look as it is now, which
    changed no committed file; its run counter's lines are lines it printed."""
    import json

    from wmrl.reproduce import FIRST_LOOK, NotebookRun, report_line

    measured = json.loads((REPO / "results" / "bench" / "first_look.json").read_text())
    assert [row["notebook"] for row in measured["notebooks"]] == list(FIRST_LOOK), "time the first look again"
    text = (REPO / "README.md").read_text()
    assert f"## First look: `make reproduce-quick` (about {measured['minutes']} minutes)" in text
    assert not measured["committed_files_changed"]
    for row in measured["notebooks"]:
        line = report_line(NotebookRun(row["notebook"], row["status"], row["train_s"], row["redraw_s"])).rstrip()
        assert line + "\n" in text, line
    head = text.split("## Where the method lives")[0]
    shown = [line for line in head.splitlines() if line.startswith("[runs] ")]
    assert shown and set(shown) <= set(measured["run_counter"]), set(shown) - set(measured["run_counter"])
