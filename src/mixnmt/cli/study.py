"""Commands that people run on a study, no rule does: the merged configuration that DVC
runs, the verification of a published experiment, its numbers in docs/results.md and the
README's claims, and the power of an experiment declared before it trains."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from mixnmt import MixnmtError
from mixnmt.cli.options import add_configfiles, positive_number
from mixnmt.files import Output
from mixnmt.withdrawn import WITHDRAWN


def config_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "overlays",
        type=Path,
        nargs="*",
        help="config files merged onto config.yaml in order, as --configfile",
    )
    s.add_argument(
        "--output",
        type=Output,
        help="write it to this file (config.yaml: what DVC runs); default: standard output",
    )


def cmd_config(a: argparse.Namespace) -> None:
    import yaml

    from mixnmt.config import for_dvc, load
    from mixnmt.files import write_text

    merged = for_dvc(load(*a.overlays))
    names = " ".join(map(str, a.overlays)) or "nothing"
    text = (
        f"# config.yaml with {names} merged on it by `mixnmt config`, and `only`'s models as the\n"
        "# entries of `models` (dvc.yaml has a stage pair per entry). `git checkout config.yaml` undoes it.\n"
        + yaml.safe_dump(merged, sort_keys=False, allow_unicode=True)
    )
    if a.output is None:
        sys.stdout.write(text)
    else:
        write_text(a.output, text)


def verify_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("folder", type=Path, help="an experiment's folder, results/<experiment>")
    add_configfiles(s, "an overlay on config.yaml that made it (default: the one in experiments/ naming it)")
    s.add_argument(
        "--quick", action="store_true", help="compare hashes only: no scoring again, no test files needed"
    )
    s.add_argument(
        "--data",
        type=Path,
        help="the folder of the dataset's files (default: data/<dataset>; a mirror will do)",
    )


def cmd_verify(a: argparse.Namespace) -> None:
    from mixnmt.verify import verify

    start = time.perf_counter()
    chain = verify(a.folder, a.configfile or [], a.quick, a.data)
    for line in chain.breaks:
        print(line)
    summary = (
        f"{a.folder}: {chain.passed} checks passed, {len(chain.breaks)} broken, {chain.skipped} skipped "
        f"downstream of a break ({'hashes only' if a.quick else 'every score recomputed'}; "
        f"{time.perf_counter() - start:.0f} s)"
    )
    if chain.breaks:
        raise MixnmtError(summary)
    print(summary, file=sys.stderr)


def readme_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("folder", type=Path, help="a published experiment's folder, results/<experiment>")
    add_configfiles(s, "an overlay on config.yaml that made it (as for verify)")
    for flag, default, what in (
        ("--results", "docs/results.md", "the file holding its block of results"),
        ("--readme", "README.md", "the file holding the claims of every experiment --results holds"),
        ("--figure", "docs/claims.png", "the claims' figure, which the README shows, and its SVG"),
    ):
        s.add_argument(flag, type=Output, default=Output(default), help=f"{what} (rewritten)")
    s.add_argument(
        "--withdrawn",
        type=Path,
        default=WITHDRAWN,
        help=f"the verdicts withdrawn since they were published, which the claims mark (default {WITHDRAWN})",
    )
    s.add_argument(
        "--check", action="store_true", help="only say whether both blocks and the figure are up to date"
    )


def cmd_readme(a: argparse.Namespace) -> None:
    from mixnmt.readme import published_studies, redraw_claims, rewrite, rewrite_claims, withdrawn_verdicts
    from mixnmt.verify import configuration

    config = configuration(a.folder, a.configfile or [])
    if not rewrite(a.results, a.folder, config, check=a.check) and a.check:
        raise MixnmtError(
            f"{a.results}: the results of {a.folder} are not the ones its tables give; run mixnmt readme"
        )
    studies, sections = published_studies(a.results, a.folder.parent)
    withdrawn = withdrawn_verdicts(studies, a.withdrawn)
    if not rewrite_claims(a.readme, studies, sections, a.figure, withdrawn, check=a.check) and a.check:
        raise MixnmtError(
            f"{a.readme}: the claims are not the ones the tables of {a.results}'s experiments give; "
            "run mixnmt readme"
        )
    if not redraw_claims(a.figure, studies, withdrawn, check=a.check) and a.check:
        raise MixnmtError(
            f"{a.figure}: not drawn from the claims of {a.results}'s experiments; run mixnmt readme"
        )


def plan_arguments(s: argparse.ArgumentParser) -> None:
    add_configfiles(s, "the experiment's overlay on config.yaml")
    s.add_argument(
        "--sd",
        type=positive_number,
        nargs="+",
        required=True,
        help="spreads of the primary metric to plan for: of a model's runs (welch), of a seed's "
        "two runs' differences (paired)",
    )


def cmd_plan(a: argparse.Namespace) -> None:
    from mixnmt.compare import POWER, STATISTICS, planned
    from mixnmt.config import load
    from mixnmt.readme import primary_name

    config = load(*(a.configfile or []))
    analysis, runs = config["analysis"], len(config["seeds"])
    if not (tests := len(analysis["contrasts"])):
        raise MixnmtError("analysis.contrasts: the experiment declares no contrast to plan for")
    statistic, margin = STATISTICS[analysis["statistic"]], analysis["equivalence"]
    found = [planned(runs, sd, tests, margin, statistic=analysis["statistic"]) for sd in a.sd]
    spread = "a seed's two runs' difference" if statistic.pairs else "each model's runs"
    print(
        f"{config['experiment']}: {runs} seeds, {tests} contrast{'s' * (tests > 1)} in "
        f"{primary_name(config)} by {statistic.name}, Holm over {'them' if tests > 1 else 'it'}; "
        f"equivalence margin {margin:g}.\nsd: of {spread}; "
        f"detects: the true difference found in {POWER:.0%} of simulated studies; equivalent: the share "
        "of studies without a difference whose two one-sided tests find it; (Holm): at Holm's strictest "
        "level (mixnmt.compare.planned).\n"
        f"{'sd':>6} {'detects':>8} {'(Holm)':>7} {'equivalent':>11} {'(Holm)':>7}"
    )
    for sd, row in zip(a.sd, found):
        print(
            f"{sd:6.2f} {row['mde']:8.2f} {row['mde_holm']:7.2f} "
            f"{row['equivalent']:11.0%} {row['equivalent_holm']:7.0%}"
        )
