"""The conda environments in envs/ provide what their rules import, and no more: the data
and scoring rules run without torch, the figures without torch or sentencepiece."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, command_modules

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
    from mixnmt.cli import COMMANDS

    found = rules()
    # config merges overlays into config.yaml for DVC, verify checks what the rules made and
    # readme writes it into the README: no rule runs them
    for_people = {"config", "verify", "readme"}
    assert {command for _, _, command in found} == set(COMMANDS) - for_people
    for _, env, _ in found:
        spec = yaml.safe_load((ROOT / "envs" / f"{env}.yaml").read_text())
        pip = next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict))
        assert all("==" in p for p in pip), (env, pip)
        assert (ROOT / "envs" / f"{env}.post-deploy.sh").exists()  # installs mixnmt itself


def lacking(env: str) -> list[str]:
    """The third-party modules environment `env` does not provide."""
    return sorted(module for module, package in THIRD_PARTY.items() if package not in packages(env))


def runs_without(missing: list[str], modules: list[str]) -> subprocess.CompletedProcess:
    """Build the `mixnmt` parser (every command builds all of it) and import `modules`, in a
    Python where the `missing` modules cannot be imported."""
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
    code += "from mixnmt.cli import parser\nparser()\n" + "".join(f"import {m}\n" for m in modules)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


@pytest.mark.parametrize(("rule", "env", "command"), rules(), ids=lambda x: str(x))
def test_environment_provides_what_its_rules_import(rule, env, command):
    """What a rule's command imports is read from its code (as dvc.yaml's dependencies are,
    tests/test_dvc.py), not listed by hand, and must import in the rule's environment."""
    modules = sorted(command_modules(command, nested=False))
    done = runs_without(lacking(env), modules)
    assert done.returncode == 0, f"{rule}: {env} lacks {lacking(env)}, but it imports:\n{done.stderr[-1500:]}"


def test_the_environment_check_catches_a_missing_module():
    """Without pyyaml (as envs/torch.yaml was), `mixnmt translate` fails to import."""
    assert runs_without(["yaml"], sorted(command_modules("translate", nested=False))).returncode != 0
