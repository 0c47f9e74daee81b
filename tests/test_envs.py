"""The conda environments in envs/ provide what their rules import, and no more: the data
and scoring rules run without torch, the figures without torch or sentencepiece."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, command_modules, rules

THIRD_PARTY = {  # import name -> the pip package of envs/*.yaml that provides it
    "torch": "torch",
    "pandas": "pandas",
    "matplotlib": "matplotlib",
    "sacrebleu": "sacrebleu",
    "sentencepiece": "sentencepiece",
    "tqdm": "tqdm",
    "jsonschema": "jsonschema",
    "yaml": "pyyaml",
}  # numpy comes with all


def pip_lines(env: str) -> list[str]:
    """The pip requirements of envs/`env`.yaml, without pip's options (an index)."""
    spec = yaml.safe_load((ROOT / "envs" / f"{env}.yaml").read_text())
    pip = next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict))
    return [line for line in pip if not line.startswith("-")]


def packages(env: str) -> set[str]:
    return {re.split("[=<>]", p)[0].lower() for p in pip_lines(env)}


def test_every_rule_that_runs_mixnmt_has_a_pinned_environment():
    from mixnmt.cli import COMMANDS

    found = rules()
    # mixnmt.cli.study's commands are people's (config merges overlays for DVC, verify checks
    # what the rules made, readme writes it into the README, plan sizes a study): no rule runs them
    for_people = {name for name, command in COMMANDS.items() if command.module == "study"}
    assert {"config", "verify", "readme", "plan"} <= for_people
    assert {command for _, _, command in found} == set(COMMANDS) - for_people
    for env in {env for _, env, _ in found} | {"torch-cuda"}:
        pip = pip_lines(env)
        assert all("==" in p for p in pip), (env, pip)
        assert (ROOT / "envs" / f"{env}.post-deploy.sh").exists()  # installs mixnmt itself


def besides_torch(env_text: str) -> list[str]:
    """An environment file's lines but its comments and torch's."""
    return [line for line in env_text.splitlines() if not line.startswith("#") and "torch" not in line]


def test_the_model_jobs_install_pytorchs_cpu_build_unless_asked_for_cuda():
    """envs/torch.yaml is envs/torch-cuda.yaml with PyTorch's CPU build of the same torch;
    `torch_build` picks one, auto by whether Snakemake sees a GPU."""
    from mixnmt.machine import torch_environment

    cpu, cuda = (ROOT / "envs" / "torch.yaml").read_text(), (ROOT / "envs" / "torch-cuda.yaml").read_text()
    (pin,) = [p for p in pip_lines("torch-cuda") if p.startswith("torch==")]
    assert "- --extra-index-url https://download.pytorch.org/whl/cpu\n" in cpu  # a torch line too
    assert f'- {pin}+cpu; sys_platform == "linux" and platform_machine == "x86_64"' in cpu
    assert besides_torch(cpu) == besides_torch(cuda)
    builds = ("auto", "cpu", "cuda")
    picked = {(build, gpu): torch_environment(build, gpu) for build in builds for gpu in (0, 1)}
    assert picked == {
        ("auto", 0): "torch", ("auto", 1): "torch-cuda",
        ("cpu", 0): "torch", ("cpu", 1): "torch",
        ("cuda", 0): "torch-cuda", ("cuda", 1): "torch-cuda",
    }  # fmt: skip


def lacking(env: str) -> list[str]:
    """The third-party modules environment `env` does not provide."""
    return sorted(module for module, package in THIRD_PARTY.items() if package not in packages(env))


def runs_without(missing: list[str], command: str, modules: list[str]) -> subprocess.CompletedProcess:
    """Build the `mixnmt` parser as `command` builds it and import `modules`, in a Python
    where the `missing` modules cannot be imported."""
    # a finder that refuses them, not sys.modules[m] = None: that would leave their names
    # in sys.modules, where libraries (scipy) look to see whether they were imported
    code = (
        f"import sys\nMISSING = {missing!r}\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] in MISSING:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Refuse())\n"
    )
    code += f"from mixnmt.cli import parser\nparser([{command!r}])\n"
    code += "".join(f"import {m}\n" for m in modules)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


@pytest.mark.parametrize(("rule", "env", "command"), rules(), ids=lambda x: str(x))
def test_environment_provides_what_its_rules_import(rule, env, command):
    """What a rule's command imports is read from its code (as dvc.yaml's dependencies are,
    tests/test_dvc.py), not listed by hand, and must import in the rule's environment."""
    modules = sorted(command_modules(command, nested=False))
    done = runs_without(lacking(env), command, modules)
    assert done.returncode == 0, f"{rule}: {env} lacks {lacking(env)}, but it imports:\n{done.stderr[-1500:]}"


def test_the_environment_check_catches_a_missing_module():
    """Without pyyaml (as envs/torch.yaml was), `mixnmt translate` fails to import."""
    modules = sorted(command_modules("translate", nested=False))
    assert runs_without(["yaml"], "translate", modules).returncode != 0
