"""The README's two commands stay true: CI runs the test command verbatim."""

import re

from conftest import ROOT


def readme_commands() -> list[str]:
    return re.findall(r"```sh\n(python3 -m venv .*)\n```", (ROOT / "README.md").read_text())


def test_ci_runs_the_readme_test_command():
    main, tests = readme_commands()
    assert main.endswith("snakemake --cores all") and tests.endswith("python -m pytest -n auto")
    assert tests in (ROOT / ".ci" / "run").read_text().splitlines()
