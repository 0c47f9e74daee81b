"""The project's conventions, checked on its code: no roster of models outside the
registry, defaults only in the constructors, modules that import only what they need,
short functions."""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import tomllib

from conftest import CONFIG, ROOT
from mixnmt.models import REGISTRY, resolve


def string_literals(path: Path) -> list[tuple[int, str]]:
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [(t.start[0], t.string) for t in tokens if t.type == tokenize.STRING]


def test_no_roster_outside_the_registry():
    """No string in the package (outside models/), the tests or the benchmarks is a model
    name: they take the models from the config and the registry. The fixtures that
    configure models (conftest.py, tiny.yaml) are where tests name them."""
    names = set(REGISTRY)
    quoted = {f"{q}{n}{q}" for n in names for q in ("'", '"')}
    files = [
        *(p for p in (ROOT / "src").rglob("*.py") if "models" not in p.parts),
        *(p for p in (ROOT / "tests").rglob("*.py") if p.name != "conftest.py"),
        *(ROOT / "benchmarks").rglob("*.py"),
    ]
    found = [
        f"{p.relative_to(ROOT)}:{line}: {s}" for p in files for line, s in string_literals(p) if s in quoted
    ]
    assert found == []


def test_defaults_live_in_the_constructors_only():
    """config.yaml lists its models without restating the constructors' defaults."""
    for name, entry in CONFIG["models"].items():
        arch, hparams = resolve(name, entry)
        assert not {
            k: v for k, v in (entry or {}).items() if k != "arch" and hparams[k] == resolve(arch, None)[1][k]
        }


@pytest.mark.parametrize(
    ("module", "kept_out"),
    [
        ("mixnmt.models", "sentencepiece"),  # models read the special ids from mixnmt.symbols
        ("mixnmt.train", "mixnmt.analysis"),  # training logs mixture usage from mixnmt.usage
        ("mixnmt.compare", "scipy.stats"),  # a second per bootstrap job; only Welch's t needs it
        ("mixnmt.evaluate", "pandas"),  # half a second per scoring job, which reads no table
        ("mixnmt.train", "pandas"),  # nor does a training job
    ],
)
def test_a_module_does_not_import_what_it_does_not_need(module, kept_out):
    code = f"import sys, {module}\nassert {kept_out!r} not in sys.modules"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, f"importing {module} imports {kept_out}:\n{done.stderr[-1500:]}"


def test_a_job_that_reads_no_table_starts_without_pandas():
    """A job builds the arguments of its own command only: the table command's import
    pandas, half a second of each of the study's many data jobs, which read none. (Before,
    `mixnmt download --help` took 1.0 s here; now 0.1 s.)"""
    data = ["download", "prepare", "spm-train", "spm-encode", "decoding", "silver", "config"]
    code = (
        f"import contextlib, io, sys\nfrom mixnmt.cli import main\nfor c in {data!r}:\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        main([c, '--help'])\n"
        "print(sorted(m for m in ('pandas', 'torch', 'matplotlib') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout == "[]\n", f"the data jobs import {done.stdout}{done.stderr[-1500:]}"


def test_checking_a_config_builds_its_models_without_importing_the_compiler():
    """Every Snakemake start checks the config by building its models on the meta device:
    a random draw or arithmetic there imports torch._dynamo, 1.9 s of each start."""
    code = (
        "import sys, yaml\nfrom mixnmt.models import check\n"
        "for path in ('config.yaml', 'tests/tiny.yaml'):\n"
        "    for name, entry in yaml.safe_load(open(path))['models'].items():\n"
        "        check(name, entry)\n"
        "assert 'torch._dynamo' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-1500:]


CONFIGS = [None, *sorted((ROOT / "experiments").glob("*.yaml")), ROOT / "tests" / "tiny.yaml"]


@pytest.mark.parametrize("overlay", CONFIGS, ids=lambda p: p and str(p.relative_to(ROOT)) or "config.yaml")
def test_snakemakes_linter_passes_the_workflow_under_every_config(overlay, monkeypatch):
    """The workflow's hygiene as Snakemake's linter sees it, with each experiment's config:
    `snakemake --lint`, through its API in this process (a subprocess each took 2.3 s of
    CI's 20 minutes, over 50 configs)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    monkeypatch.chdir(ROOT)
    said, configs = io.StringIO(), ConfigSettings(configfiles=[overlay] if overlay else [])
    with redirect_stdout(said), redirect_stderr(said), SnakemakeApi(OutputSettings()) as api:
        linted = api.workflow(ResourceSettings(cores=1), configs, snakefile=ROOT / "Snakefile").lint()
    text = said.getvalue()
    assert not linted and "Congratulations, your workflow is in a good condition" in text, text


def test_the_workflow_is_formatted_as_snakefmt_formats_it():
    command = [sys.executable, "-m", "snakefmt", "--check", "Snakefile", "workflow/"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_tests_install_no_executor_plugin_that_asks_slurm_at_every_snakemake_start():
    """Snakemake imports every installed executor plugin as it starts, and the SLURM one then
    asks `scontrol`, which waits 9 s wherever SLURM is installed but stopped: CI's machine
    after a session started the tier's cluster (stop 54's CI ran 34% longer than the same
    tests here). Only the integration tier runs the SLURM profile; it installs the extra."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    plugin = "snakemake-executor-plugin-slurm"
    assert not [r for r in extras["test"] if r.startswith(plugin)], extras["test"]
    assert [r for r in extras["slurm"] if r.startswith(plugin)], extras["slurm"]
    assert '".[test,slurm]"' in (ROOT / "README.md").read_text()


def test_no_function_in_the_package_runs_past_60_lines():
    """A function a reader must hold in mind at once stays short: the phases of training,
    the CLI's commands and the score table's parts each have their own."""
    lengths = {
        f"{path.relative_to(ROOT)}:{node.name}": node.end_lineno - node.lineno + 1
        for path in (ROOT / "src").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    assert max(lengths.values()) < 60, {f: n for f, n in lengths.items() if n >= 60}


CAPTIONS = sorted((ROOT / "workflow" / "report").glob("*.rst"))


@pytest.mark.parametrize("caption", CAPTIONS, ids=lambda p: p.name)
def test_every_caption_is_valid_restructured_text(caption):
    """Snakemake's report renders the captions with docutils: "|A&S|" was a substitution."""
    docutils_core = pytest.importorskip("docutils.core")
    from docutils.writers import null

    warnings = io.StringIO()
    overrides = {"warning_stream": warnings, "report_level": 2}
    docutils_core.publish_string(caption.read_text(), writer=null.Writer(), settings_overrides=overrides)
    assert warnings.getvalue() == ""


@pytest.mark.parametrize("caption", CAPTIONS, ids=lambda p: p.name)
def test_every_caption_reads_the_same_in_both_reports(caption):
    """mixnmt's report shows a caption's paragraphs as they are, Snakemake's renders them
    with docutils: a caption has no markup, so that both read the same (a reader of the
    HTML report saw "1 - (\\|A&S\\| + ..." where Snakemake's showed "1 - (|A&S| + ...")."""
    docutils_core = pytest.importorskip("docutils.core")
    text = caption.read_text().strip()
    overrides = {"report_level": 5}
    rendered = docutils_core.publish_doctree(text, settings_overrides=overrides).astext()
    assert " ".join(rendered.split()) == " ".join(text.split())
