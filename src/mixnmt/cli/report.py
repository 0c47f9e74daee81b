"""The study's tables, figures and report: a table or figure from the inputs its registry
entry declares (mixnmt.tables, mixnmt.figures), the report from them all."""

from __future__ import annotations

import argparse
from pathlib import Path

from mixnmt import MixnmtError
from mixnmt.cli.options import FILES, MODEL_PATHS, add_runs, json_object
from mixnmt.files import Output


def _add_inputs(s: argparse.ArgumentParser, kinds: tuple[str, ...]) -> None:
    """One required option per input kind of a figure or table."""
    from mixnmt.inputs import INPUTS

    for kind in kinds:
        spec = INPUTS[kind]
        if spec.single:
            s.add_argument(f"--{kind}", type=Path, required=True, help=spec.help)
        elif spec.per_model:
            s.add_argument(f"--{kind}", nargs="+", required=True, help=spec.help, **MODEL_PATHS)
        else:
            s.add_argument(f"--{kind}", help=spec.help, **FILES)


def _input_paths(a: argparse.Namespace, kind: str) -> list[Path]:
    """The files given for input kind `kind` (`_add_inputs`)."""
    from mixnmt.inputs import INPUTS

    value, spec = getattr(a, kind), INPUTS[kind]
    return [value] if spec.single else list(value.values()) if spec.per_model else value


def _load_inputs(a: argparse.Namespace, kinds: tuple[str, ...]) -> dict:
    """The inputs of a figure or table, read from their `--<kind>` options, those that
    record their runs checked against `--runs`."""
    from mixnmt.inputs import INPUTS
    from mixnmt.lineage import refuse_foreign, refuse_misnamed, refuse_twice

    recording = [kind for kind in kinds if INPUTS[kind].runs]
    refuse_foreign([p for kind in recording for p in _input_paths(a, kind)], a.runs)
    for kind in recording:
        if INPUTS[kind].per_model:
            refuse_misnamed(getattr(a, kind))
        if INPUTS[kind].one_per:
            refuse_twice(getattr(a, kind), f"--{kind}", INPUTS[kind].one_per)
    values = {kind: getattr(a, kind) for kind in kinds}
    return {kind: INPUTS[kind].load(v) for kind, v in values.items()}


def _members(
    s: argparse.ArgumentParser, registry: dict, metavar: str, output: str
) -> list[argparse.ArgumentParser]:
    """One subcommand per member of a registry (TABLES, FIGURES), with the inputs it declares."""
    members = s.add_subparsers(dest="name", required=True, metavar=metavar)
    made = []
    for name, spec in registry.items():
        m = members.add_parser(name, help=spec.help, description=spec.help)
        _add_inputs(m, spec.inputs)
        add_runs(m)
        m.add_argument("--output", type=Output, required=True, help=output)
        made.append(m)
    return made


def table_arguments(s: argparse.ArgumentParser) -> None:
    from mixnmt.tables import TABLES

    _members(s, TABLES, "TABLE", "TSV")


def cmd_table(a: argparse.Namespace) -> None:
    from mixnmt.files import write_table
    from mixnmt.provenance import stamped
    from mixnmt.tables import TABLES

    table = TABLES[a.name]
    write_table(a.output, stamped(table.build(**_load_inputs(a, table.inputs))))


def plot_arguments(s: argparse.ArgumentParser) -> None:
    from mixnmt.figures import FIGURES

    for m in _members(s, FIGURES, "PLOT", "PNG; the SVG goes next to it"):
        m.add_argument(
            "--models",
            nargs="+",
            default=[],
            help="the study's models in the config's order: each keeps its colour in every figure",
        )


def cmd_plot(a: argparse.Namespace) -> None:
    from mixnmt.figures import FIGURES
    from mixnmt.plots import roster, save
    from mixnmt.provenance import made_from

    figure = FIGURES[a.name]
    with roster(a.models):
        drawn = figure(**_load_inputs(a, figure.inputs))
    save(drawn, a.output, made_from([p for kind in figure.inputs for p in _input_paths(a, kind)]))


def report_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--experiment", required=True, help="the experiment's name (results/<experiment>)")
    s.add_argument("--config", type=json_object, required=True, help="JSON: the configuration used")
    s.add_argument("--scores", type=Path, required=True, help="the score table (TSV)")
    s.add_argument("--significance", help="`mixnmt significance` files, one per test set and seed", **FILES)
    s.add_argument("--lengths", help="BLEU-by-length tables, one per test set", **FILES)
    s.add_argument("--manifests", help="training manifests (JSON)", **FILES)
    s.add_argument("--figures", help="PNG files, named by figure", **FILES)
    s.add_argument("--tables", help="TSV files, named by table", **FILES)
    s.add_argument("--captions", type=Path, required=True, help="folder of <figure>.rst captions")
    s.add_argument("--output", type=Output, required=True, help="report.html")
    add_runs(s)


def _by_name(paths: list[Path], option: str) -> dict[str, Path]:
    """Files named by their stems (figures, tables); two of one name are refused, since
    one would be dropped."""
    named: dict[str, Path] = {}
    for path in paths:
        if path.stem in named:
            raise MixnmtError(f"{option}: two files named {path.stem} ({named[path.stem]}, {path})")
        named[path.stem] = path
    return named


def cmd_report(a: argparse.Namespace) -> None:
    from mixnmt.report import ReportInputs, write_report

    figures, tables = _by_name(a.figures, "--figures"), _by_name(a.tables, "--tables")
    inputs = ReportInputs(a.scores, a.significance, a.lengths, a.manifests, figures, tables, a.captions)
    write_report(a.output, a.experiment, a.config, inputs, a.runs)
