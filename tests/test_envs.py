"""The conda environments in envs/ provide what their rules import, and no more: the data
and scoring rules run without torch, the figures without torch or sentencepiece."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT

MODULES = {  # mixnmt subcommand -> the module it runs
    "download": "mixnmt.download",
    "prepare": "mixnmt.data",
    "spm-train": "mixnmt.tokenize",
    "spm-encode": "mixnmt.tokenize",
    "train": "mixnmt.train",
    "translate": "mixnmt.decode",
    "speed": "mixnmt.speed",
    "analyse": "mixnmt.analysis",
    "score": "mixnmt.evaluate",
    "significance": "mixnmt.evaluate",
    "contrasts": "mixnmt.evaluate",
    "reliance": "mixnmt.reliance",
    "lengths": "mixnmt.evaluate",
    "aggregate": "mixnmt.evaluate",
    "table": "mixnmt.tables",
    "plot": "mixnmt.plots",
    "report": "mixnmt.report",
}
THIRD_PARTY = {
    "torch",
    "pandas",
    "matplotlib",
    "sacrebleu",
    "sentencepiece",
    "tqdm",
    "jsonschema",
}  # numpy comes with all


def rules() -> list[tuple[str, str, str]]:
    """(rule, environment, mixnmt subcommand) for every rule that runs one."""
    found = []
    for path in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        for block in re.split(r"\n(?=\s*rule\b)", path.read_text()):
            env = re.search(r'conda:\s*"\.\./\.\./envs/(\w+)\.yaml"', block)
            command = re.search(r'"mixnmt ([\w-]+)', block)
            name = re.search(r"rule (\w+):|name:\s*f?\"([\w{}]+)\"", block)
            if env and command and name:
                found.append((name.group(1) or name.group(2), env.group(1), command.group(1)))
    return found


def packages(env: str) -> set[str]:
    spec = yaml.safe_load((ROOT / "envs" / f"{env}.yaml").read_text())
    pip = next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict))
    return {re.split("[=<>]", p)[0].lower() for p in pip}


def test_every_rule_that_runs_mixnmt_has_a_pinned_environment():
    found = rules()
    assert {command for _, _, command in found} == set(MODULES)
    for _, env, _ in found:
        spec = yaml.safe_load((ROOT / "envs" / f"{env}.yaml").read_text())
        pip = next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict))
        assert all("==" in p for p in pip), (env, pip)
        assert (ROOT / "envs" / f"{env}.post-deploy.sh").exists()  # installs mixnmt itself


@pytest.mark.parametrize("env", sorted({env for _, env, _ in rules()}))
def test_environment_provides_what_its_rules_import(env):
    modules = sorted({MODULES[command] for _, e, command in rules() if e == env})
    missing = sorted(THIRD_PARTY - packages(env))
    code = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in missing)
    code += "".join(f"import {m}\n" for m in modules)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, f"{env} lacks {missing}, but {modules} need it:\n{done.stderr[-1500:]}"


@pytest.mark.parametrize(
    ("module", "kept_out"),
    [
        ("mixnmt.models", "sentencepiece"),  # models read the special ids from mixnmt.symbols
        ("mixnmt.train", "mixnmt.analysis"),  # training logs mixture usage from mixnmt.usage
    ],
)
def test_a_module_does_not_import_what_it_does_not_need(module, kept_out):
    code = f"import sys, {module}\nassert {kept_out!r} not in sys.modules"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, f"importing {module} imports {kept_out}:\n{done.stderr[-1500:]}"


def test_no_function_in_the_package_runs_past_60_lines():
    """A function a reader must hold in mind at once stays short: the phases of training,
    the CLI's commands and the score table's parts each have their own."""
    import ast

    lengths = {
        f"{path.relative_to(ROOT)}:{node.name}": node.end_lineno - node.lineno + 1
        for path in (ROOT / "src").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    assert max(lengths.values()) < 60, {f: n for f, n in lengths.items() if n >= 60}
