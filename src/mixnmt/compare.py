"""Comparisons of systems on one test set: sacreBLEU's paired bootstrap against a
baseline (per seed), contrasts over seeds (Welch's t or the paired t, equivalence by TOST,
Holm's correction; the bootstrap of runs and sentences describes them) and BLEU by source length."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.significance import PairedTest

from mixnmt import MixnmtError
from mixnmt.evaluate import compared, read_aligned
from mixnmt.files import read_lines, write_json, write_table
from mixnmt.paths import run
from mixnmt.provenance import code_version, stamped
from mixnmt.runs import ANALYSIS_ADDED

METRICS = {"bleu": BLEU, "chrf": CHRF, "ter": TER}  # sacreBLEU defaults: 13a, chrF2, tercom
CONTRASTED = ("bleu", "chrf")  # the metrics of the contrasts, one of them primary
ALPHA = 0.05  # the family-wise error rate of the primary contrasts (Holm)
POWER = 0.8  # of the minimum detectable effect
DRAWS = 100_000  # simulated studies behind a minimum detectable effect


def significance(
    references: Path,
    systems: dict[str, Path],
    baseline: str,
    resamples: int,
    testset: str,
    seed: int,
    output: Path,
    expected: dict[str, str] | None = None,
) -> dict:
    """BLEU, chrF and TER of every system with 95% confidence intervals, and the p-value
    of its difference from `baseline`: sacreBLEU's paired bootstrap resampling; with the
    run that made each translation (each one of `expected`'s, if given)."""
    if baseline not in systems:
        raise MixnmtError(f"analysis.baseline: {baseline!r} is not one of the systems ({', '.join(systems)})")
    made = compared(systems, expected, seed, testset, references)
    order = [baseline, *(name for name in systems if name != baseline)]
    named = [(name, read_aligned(systems[name], references)[0]) for name in order]
    metrics = {key: make() for key, make in METRICS.items()}
    test = PairedTest(named, metrics, [read_lines(references)], test_type="bs", n_samples=resamples)
    signatures, results = test()  # keyed by sacreBLEU's metric names, in the order of `metrics`
    rows = []
    for i, model in enumerate(results["System"]):
        row = {"model": model, "testset": testset}
        for key, name in zip(metrics, signatures):
            result = results[name][i]
            p = None if result.p_value is None else float(result.p_value)  # sacreBLEU gives numpy floats
            row |= {
                key: round(float(result.score), 2),
                f"{key}_ci": round(float(result.ci), 2),
                f"{key}_p": p,
            }
        rows.append(row)
    payload = {
        "testset": testset,
        "seed": seed,
        "baseline": baseline,
        "signatures": {key: str(sig) for key, sig in zip(metrics, signatures.values())},
        "systems": rows,
        "runs": made,
        "commit": code_version(),
    }
    write_json(output, payload)
    return payload


def corpus_score(metric: BLEU | CHRF, stats: np.ndarray) -> float:
    """The corpus score of sentence statistics (sentences, stats), as sacreBLEU's own
    bootstrap computes it."""
    return metric._compute_score_from_stats(list(stats.sum(0))).score


def welch(a: list[float], b: list[float], margin: float) -> dict[str, float]:
    """B minus A with the training run as the unit: the difference of the mean corpus
    scores over each model's runs (unpaired: seed i of A is not matched with seed i of B;
    where the two share their parameter layout, one seed gives both the same initial
    weights and batches, and where the pairs' scores correlate positively, as in the runs
    seen, the unpaired test is conservative: `paired` uses the match), Welch's t test of
    it (`t_test`). Assumes the runs' scores are normal within each model, variances may
    differ. NaN where a model has one run."""
    delta = float(np.mean(b) - np.mean(a))
    if min(len(a), len(b)) < 2:
        return undefined(delta)
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    df = float(_welch_df(va, vb, len(a), len(b))) if va + vb else math.inf  # inf: no spread
    return t_test(delta, math.sqrt(va + vb), df, margin)


def paired(a: list[float], b: list[float], margin: float) -> dict[str, float]:
    """B minus A with the seed's pair of runs as the unit: the mean of the differences
    b[i] - a[i] of runs of the same seed (the lists in the same seed order), tested by the
    paired t test (`t_test` with n - 1 degrees of freedom). A seed's two runs share what
    the seed draws (where the models share their parameter layout, the initial weights and
    the batches), so the pair cancels the seeds' spread that Welch's t keeps. Assumes the
    differences are normal. NaN with fewer than two pairs."""
    if len(a) != len(b):
        raise MixnmtError(
            f"analysis.statistic: paired needs one run of each model per seed, got {len(a)} and {len(b)}"
        )
    differences = np.subtract(b, a)
    delta = float(differences.mean())
    if len(a) < 2:
        return undefined(delta)
    se = float(differences.std(ddof=1)) / math.sqrt(len(a))
    return t_test(delta, se, float(len(a) - 1), margin)


def undefined(delta: float) -> dict[str, float]:
    """A difference without a test (one run, or one pair): every statistic NaN."""
    return {
        "delta": delta,
        **dict.fromkeys(("low", "high", "low90", "high90", "p", "tost_p", "df"), math.nan),
    }


def t_test(delta: float, se: float, df: float, margin: float) -> dict[str, float]:
    """The t test of a difference `delta` with standard error `se` and `df` degrees of
    freedom: two-sided p, 95% and 90% intervals, and the p of the two one-sided tests that
    it lies within +-`margin` (`tost_p`: below ALPHA exactly where the 90% interval lies
    inside the margin)."""
    if se == 0:  # every run (or pair) agrees: the difference is exact
        p, tost_p = (1.0 if delta == 0 else 0.0), (0.0 if abs(delta) < margin else 1.0)
        exact = dict.fromkeys(("low", "high", "low90", "high90"), delta)
        return {"delta": delta, **exact, "p": p, "tost_p": tost_p, "df": math.inf}
    from scipy.stats import t as student  # here, not above: a second's import in every scoring job

    t = student(df)
    half95, half90 = t.ppf(0.975) * se, t.ppf(0.95) * se
    return {
        "delta": delta,
        "low": delta - half95,
        "high": delta + half95,
        "low90": delta - half90,
        "high90": delta + half90,
        "p": float(2 * t.sf(abs(delta) / se)),
        "tost_p": float(max(t.sf((margin + delta) / se), t.sf((margin - delta) / se))),
        "df": df,
    }


def _welch_df(va: float | np.ndarray, vb: float | np.ndarray, na: int, nb: int) -> float | np.ndarray:
    """Welch-Satterthwaite's degrees of freedom of a difference of means whose squared
    standard errors are `va` and `vb`, from `na` and `nb` runs."""
    return (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))


def _simulated_welch(a: list[float], b: list[float], rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """DRAWS studies of `welch` with as many runs as `a` and `b` and their spreads, no true
    difference: each study's difference, standard error and degrees of freedom."""
    sd_a, sd_b = float(np.std(a, ddof=1)), float(np.std(b, ddof=1))
    runs_a = sd_a * rng.standard_normal((DRAWS, len(a)))  # (DRAWS, runs): a study per row
    runs_b = sd_b * rng.standard_normal((DRAWS, len(b)))
    va, vb = runs_a.var(axis=1, ddof=1) / len(a), runs_b.var(axis=1, ddof=1) / len(b)
    noise = runs_b.mean(axis=1) - runs_a.mean(axis=1)
    return noise, np.sqrt(va + vb), _welch_df(va, vb, len(a), len(b))


def _simulated_paired(a: list[float], b: list[float], rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """DRAWS studies of `paired` with as many pairs as `a` and `b` and the spread of their
    differences, no true difference: each study's difference, standard error and degrees
    of freedom."""
    pairs = float(np.std(np.subtract(b, a), ddof=1)) * rng.standard_normal((DRAWS, len(a)))
    df = np.full(DRAWS, len(a) - 1.0)
    return pairs.mean(axis=1), pairs.std(axis=1, ddof=1) / math.sqrt(len(a)), df


def detectable(
    a: list[float], b: list[float], tests: int | None = None, *, statistic: str
) -> dict[str, float]:
    """The minimum detectable effect: the true difference B - A that the `statistic`'s
    test at two-sided ALPHA finds, with its sign, in POWER of DRAWS simulated studies with
    as many runs as `a` and `b` and their standard deviations (`paired`: that of their
    differences; normal scores; the draws are seeded, so the same runs give the same
    figure): of this test alone (`mde`) and, for a contrast judged in a Holm family of
    `tests`, at Holm's strictest level ALPHA / `tests`, which it passes whatever the
    family's other contrasts show (`mde_holm`; NaN without `tests`). Simulated, not by
    the shift of the t quantiles, which is optimistic with few runs (it ignores that each
    study estimates its own spread and, for Welch's t, degrees of freedom). NaN where a
    model has one run. `statistic`: a key of STATISTICS."""
    from scipy.stats import t as student

    def found(noise: np.ndarray, se: np.ndarray, df: np.ndarray, level: float) -> float:
        """A study finds a true difference d where (d + noise) / se passes its critical t,
        so where d passes a threshold of its own: POWER of them find its POWER quantile."""
        return float(np.quantile(student.ppf(1 - level / 2, df) * se - noise, POWER))

    levels = {"mde": ALPHA, "mde_holm": math.nan if tests is None else ALPHA / tests}
    return _simulated(a, b, levels, found, 0.0, statistic)


def equivalent(
    a: list[float], b: list[float], margin: float, tests: int | None = None, *, statistic: str
) -> dict[str, float]:
    """The power of the equivalence: the share of DRAWS simulated studies with as many runs
    as `a` and `b` and their spreads (as `detectable` draws them), and no true difference,
    whose two one-sided tests put B - A within +-`margin` at ALPHA (`equivalent`) and, for
    a contrast judged in a Holm family of `tests`, at Holm's strictest level ALPHA / `tests`
    (`equivalent_holm`; NaN without `tests`). NaN where a model has one run."""
    from scipy.stats import t as student

    def found(noise: np.ndarray, se: np.ndarray, df: np.ndarray, level: float) -> float:
        """`t_test`'s tost_p is below `level` where the difference lies within the margin
        by more than the critical t times its standard error."""
        return float(np.mean(np.abs(noise) + student.ppf(1 - level, df) * se < margin))

    levels = {"equivalent": ALPHA, "equivalent_holm": math.nan if tests is None else ALPHA / tests}
    return _simulated(a, b, levels, found, 1.0, statistic)


def _simulated(
    a: list[float],
    b: list[float],
    levels: dict[str, float],
    found: Callable[[np.ndarray, np.ndarray, np.ndarray, float], float],
    exact: float,
    statistic: str,
) -> dict[str, float]:
    """`found` at each of `levels` (a NaN level stays NaN) over the `statistic`'s DRAWS
    seeded studies with `a`'s and `b`'s runs and spreads and no true difference (their
    differences, standard errors and degrees of freedom); `exact` where every run (or pair)
    agrees; NaN where a model has one run."""
    if min(len(a), len(b)) < 2:
        return dict.fromkeys(levels, math.nan)
    chosen = STATISTICS[statistic]
    spreads = [np.std(np.subtract(b, a))] if chosen.pairs else [np.std(a), np.std(b)]
    if not any(spreads):  # every run (or pair) agrees: the difference is exact
        return {key: level if math.isnan(level) else exact for key, level in levels.items()}
    draws = chosen.simulate(a, b, np.random.default_rng(0))
    return {key: level if math.isnan(level) else found(*draws, level) for key, level in levels.items()}


def planned(runs: int, sd: float, tests: int, margin: float, *, statistic: str) -> dict[str, float]:
    """What a study would find before it trains: `detectable` and `equivalent` for `runs`
    seeds a model whose scores vary with `sd` (`paired`: the pairs' differences vary with
    `sd`), judged in a Holm family of `tests` contrasts against the equivalence `margin`."""
    if runs < 2:
        raise MixnmtError(f"seeds: a plan needs at least 2, got {runs}")
    if not (math.isfinite(sd) and sd > 0):
        raise MixnmtError(f"sd: a plan needs a positive, finite spread, got {sd:g}")
    centred = np.arange(runs) - (runs - 1) / 2
    spread = list(centred * sd / centred.std(ddof=1))  # `runs` scores whose sd is exactly `sd`
    a = [0.0] * runs if STATISTICS[statistic].pairs else spread
    return detectable(a, spread, tests, statistic=statistic) | equivalent(
        a, spread, margin, tests, statistic=statistic
    )


@dataclass(frozen=True)
class Statistic:
    """A test of a contrast's B - A over its runs (analysis.statistic), and its words."""

    test: Callable[[list[float], list[float], float], dict[str, float]]
    simulate: Callable[[list[float], list[float], np.random.Generator], tuple[np.ndarray, ...]]
    name: str  # as legends write it: "its 95% interval (Welch's t)"
    p: str  # its p, as legends write it: "Welch's p adjusted by Holm's method"
    label: str  # as headers write it: "Welch p"
    pairs: bool  # whether it matches the runs of a seed


STATISTICS = {  # analysis.statistic -> its test
    "welch": Statistic(welch, _simulated_welch, "Welch's t", "Welch's p", "Welch", pairs=False),
    "paired": Statistic(
        paired, _simulated_paired, "the paired t over the seeds", "the paired t's p", "paired", pairs=True
    ),
}


def statistic_of(config: dict) -> Statistic:
    """The statistic of `config`'s contrasts (analysis.statistic; as a report records the
    configuration, without it at the value reports had before it: `runs.ANALYSIS_ADDED`)."""
    return STATISTICS[config["analysis"].get("statistic", ANALYSIS_ADDED["statistic"])]


def bootstrap_runs(
    a: list[np.ndarray], b: list[np.ndarray], metric: BLEU | CHRF, resamples: int, rng: np.random.Generator
) -> dict[str, float]:
    """The secondary description of B minus A: a bootstrap that resamples each model's
    runs (independently) and the test sentences (the same ones for both): 95% interval
    and two-sided p. With few runs it is too narrow (3 runs have 10 distinct resamples and
    a plug-in variance), so no claim rests on it. `a`, `b`: each run's sentence statistics."""
    n = len(a[0])
    draws = np.empty(resamples)
    for r in range(resamples):
        ia, ib = rng.integers(len(a), size=len(a)), rng.integers(len(b), size=len(b))
        sentences = rng.integers(n, size=n)
        draws[r] = np.mean([corpus_score(metric, b[i][sentences]) for i in ib]) - np.mean(
            [corpus_score(metric, a[i][sentences]) for i in ia]
        )
    low, high = np.percentile(draws, [2.5, 97.5])
    p = 2 * min((draws <= 0).mean(), (draws >= 0).mean())  # a draw of exactly 0 counts on both sides
    return {
        "boot_low": float(low),
        "boot_high": float(high),
        "boot_p": float(min(max(p, 1 / resamples), 1.0)),
    }


def paired_p(a: str, hyps_a: list[str], b: str, hyps_b: list[str], refs: list[str], resamples: int) -> dict:
    """sacreBLEU's paired bootstrap of B against A on one seed's translations: the
    p-value of its BLEU and of its chrF difference."""
    named, metrics = [(a, hyps_a), (b, hyps_b)], {"bleu": BLEU(), "chrf": CHRF()}
    _, results = PairedTest(named, metrics, [refs], test_type="bs", n_samples=resamples)()
    return {"bleu": float(results["BLEU"][1].p_value), "chrf": float(results["chrF2"][1].p_value)}


def holm(p: list[float], tost_p: list[float]) -> tuple[list[float], list[float]]:
    """Holm's step-down adjustment over both hypotheses of every contrast, no difference
    (`p`) and no equivalence (`tost_p`), with Shaffer's logical constraint: the two
    exclude each other (a difference is 0 or at least the margin, not both), so at each
    step ALPHA is divided by the number of contrasts with a hypothesis not yet rejected,
    the most that can still be true. Adjusting each kind in a family of its own let the
    two families err together: up to about twice ALPHA over the study."""
    tested = [*p, *tost_p]  # contrast i's hypotheses: i and len(p) + i
    open_ = [2] * len(p)  # per contrast, its hypotheses not yet rejected
    adjusted, running = [0.0] * len(tested), 0.0
    for i in sorted(range(len(tested)), key=tested.__getitem__):
        running = max(running, min(1.0, sum(n > 0 for n in open_) * tested[i]))
        adjusted[i] = running
        open_[i % len(p)] -= 1
    return adjusted[: len(p)], adjusted[len(p) :]


def verdict(level: dict[str, float | None], margin: float) -> str:
    """What a primary contrast supports: a difference (Welch's p, adjusted by `holm`, below
    ALPHA), no difference (the two one-sided tests' p against +-margin, adjusted with it,
    below ALPHA), or neither (also where a model has one run)."""
    if level["p_holm"] < ALPHA:
        return "B better" if level["delta"] > 0 else "A better"
    if level["tost_p_holm"] < ALPHA:
        return f"equivalent (within {margin:g})"
    return "undecided"


def judge(rows: list[dict], metric: str, margin: float) -> None:
    """The verdicts of the primary cells, in `metric`, of a study's contrasts (`rows`):
    Welch's p and the two one-sided tests' p, adjusted together over the contrasts by
    `holm` (`<metric>_p_holm`, `<metric>_tost_p_holm`; a model with one run counts as
    p = 1), so that the study's claims, differences and equivalences alike, err at most at
    the family-wise ALPHA; `<metric>_hypotheses` counts the hypotheses adjusted together.
    The p-values are the tests' own, unrounded: `kept` rounds them once the verdicts are
    decided (rounded first, six contrasts' p of 0.00834 would pass as 6 x 0.0083 < ALPHA)."""
    p, tost_p = (
        [1.0 if row[f"{metric}_{t}"] is None else row[f"{metric}_{t}"] for row in rows]
        for t in ("p", "tost_p")
    )
    for row, p_holm, tost_p_holm in zip(rows, *holm(p, tost_p)):
        row[f"{metric}_p_holm"], row[f"{metric}_tost_p_holm"] = p_holm, tost_p_holm
        row[f"{metric}_hypotheses"] = 2 * len(rows)
        level = {k.removeprefix(f"{metric}_"): v for k, v in row.items() if k.startswith(f"{metric}_")}
        row[f"{metric}_verdict"] = verdict(level, margin)


def _contrasted(
    references: Path, runs: dict[str, dict[int, Path]], pairs: list[tuple[str, str]], metrics: dict
) -> tuple[dict, dict]:
    """Per (model, seed) of the contrasted runs: its translation's lines, and per metric
    its sentence statistics (sentences, stats)."""
    refs = read_lines(references)
    stats, texts = {}, {}
    for a, b in pairs:
        for name in (a, b):
            for seed, path in runs[name].items():
                if (name, seed) not in texts:
                    texts[name, seed] = read_aligned(path, references)[0]
                    stats[name, seed] = {
                        key: np.array(m._extract_corpus_statistics(texts[name, seed], [refs]))
                        for key, m in metrics.items()
                    }
    return texts, stats


def contrasts(
    references: Path,
    runs: dict[str, dict[int, Path]],
    pairs: list[tuple[str, str]],
    resamples: int,
    margin: float,
    testset: str,
    output: Path,
    primary: str | None = None,
    expected: dict[str, str] | None = None,
    *,
    statistic: str,
) -> dict:
    """Each contrast (A, B) of the study on one test set, over every run's translations
    (`runs`: model -> seed -> path): per metric, B's score minus A's as the difference of
    their means over runs, with the test of `statistic` (`STATISTICS`: interval, p), the
    minimum detectable effect (`detectable`) and the bootstrap of runs and sentences as a
    secondary description (`bootstrap_runs`); beside them, per seed both models have,
    sacreBLEU's paired bootstrap p (the test sentences' sampling only). In the `primary`
    metric (given where this is the pre-declared test set) `holm` adjusts the contrasts'
    p-values and each gets a verdict with the equivalence `margin` (in that metric's
    points); every other cell is descriptive. Also the run that made each translation
    (each one of `expected`'s)."""
    labelled = {run(model, seed): path for model, seeds in runs.items() for seed, path in seeds.items()}
    made = compared(labelled, expected, None, testset, references)
    _check_settings(runs, pairs, primary, statistic)
    refs, metrics = read_lines(references), {key: METRICS[key]() for key in CONTRASTED}
    texts, stats = _contrasted(references, runs, pairs, metrics)
    rows = []
    for a, b in pairs:
        shared = sorted(set(runs[a]) & set(runs[b]))
        per_seed = [paired_p(a, texts[a, s], b, texts[b, s], refs, resamples) for s in shared]
        row = {"testset": testset, "a": a, "b": b, "seeds_a": len(runs[a]), "seeds_b": len(runs[b])}
        for key, metric in metrics.items():
            of_a, of_b = ([stats[name, s][key] for s in sorted(runs[name])] for name in (a, b))
            tests = len(pairs) if key == primary else None  # the primary cells: Holm's family
            draws = _draws(a, b, key)
            described = _described(of_a, of_b, metric, resamples, draws, margin, tests, statistic)
            row |= {f"{key}_{k}": v for k, v in described.items()}
            row[f"{key}_p_seeds"] = [p[key] for p in per_seed]
            row |= {f"{key}_{k}": None for k in ("p_holm", "tost_p_holm", "hypotheses")}
            row[f"{key}_verdict"] = "descriptive"
        rows.append(row)
    if primary is not None:
        judge(rows, primary, margin)
    payload = {
        "testset": testset,
        "margin": margin,
        "primary": primary,
        "statistic": statistic,
        "contrasts": [kept(row) for row in rows],
        "runs": made,
        "commit": code_version(),
    }
    write_json(output, payload)
    return payload


def _check_settings(
    runs: dict[str, dict[int, Path]], pairs: list[tuple[str, str]], primary: str | None, statistic: str
) -> None:
    """The primary metric and the statistic are known ones, every contrasted model has
    runs, and a statistic that pairs the runs of a seed has the same seeds of both models
    of every contrast."""
    if primary is not None and primary not in CONTRASTED:
        expected_one = ", ".join(CONTRASTED)
        raise MixnmtError(f"analysis.primary.metric: expected one of {expected_one}, got {primary!r}")
    if statistic not in STATISTICS:
        raise MixnmtError(f"analysis.statistic: expected one of {', '.join(STATISTICS)}, got {statistic!r}")
    for a, b in pairs:
        for name in (a, b):
            if name not in runs:
                raise MixnmtError(
                    f"analysis.contrasts: {name!r} is not one of the systems ({', '.join(runs)})"
                )
        if STATISTICS[statistic].pairs and set(runs[a]) != set(runs[b]):
            seeds_a, seeds_b = (" ".join(map(str, sorted(runs[name]))) for name in (a, b))
            raise MixnmtError(
                f"analysis.statistic: {statistic} needs the same seeds of {a} ({seeds_a}) and {b} ({seeds_b})"
            )


def _draws(a: str, b: str, metric: str) -> np.random.Generator:
    """The random stream of one contrast's bootstrap in one metric, seeded by their names:
    a contrast's resamples are the same whichever contrasts the study adds before it."""
    return np.random.default_rng(list(f"{a}\t{b}\t{metric}".encode()))


def _described(
    a: list[np.ndarray],
    b: list[np.ndarray],
    metric: BLEU | CHRF,
    resamples: int,
    rng: np.random.Generator,
    margin: float,
    tests: int | None,
    statistic: str,
) -> dict[str, float | None]:
    """Of one metric, both models' mean and sd of their runs' corpus scores, the test of
    `statistic` (against the equivalence `margin`), `detectable`'s (in a Holm family of
    `tests`) and `bootstrap_runs`', unrounded (`kept` rounds them). `a`, `b`:
    each run's sentence statistics."""
    scores = {side: [corpus_score(metric, x) for x in of] for side, of in (("a", a), ("b", b))}
    row: dict[str, float | None] = {}
    for side, values in scores.items():
        row[side] = float(np.mean(values))
        row[f"sd_{side}"] = float(np.std(values, ddof=1)) if len(values) > 1 else None
    level = STATISTICS[statistic].test(scores["a"], scores["b"], margin)
    level |= detectable(scores["a"], scores["b"], tests, statistic=statistic)
    level |= bootstrap_runs(a, b, metric, resamples, rng)
    return row | {k: None if math.isnan(v) else float(v) for k, v in level.items()}  # None: one run


def kept(row: dict) -> dict:
    """A contrast as its file keeps it: p-values (Holm's too) to 4 decimals, the other
    statistics to 2; counts, names and lists as they are."""
    return {
        k: round(v, 4 if k.endswith(("p", "p_holm")) else 2) if isinstance(v, float) else v
        for k, v in row.items()
    }


def bucket_labels(edges: list[int]) -> list[str]:
    """Names of the source-length buckets that `edges` (words, increasing) delimit."""
    labels = [f"<={edges[0]}"] + [f"{a + 1}-{b}" for a, b in zip(edges, edges[1:])]
    return labels + [f">{edges[-1]}"]


def bleu_by_length(
    sources: Path,
    references: Path,
    systems: dict[str, Path],
    edges: list[int],
    resamples: int,
    testset: str,
    output: Path,
    expected: dict[str, str] | None = None,
) -> pd.DataFrame:
    """BLEU of every system on the sentences of each source-length bucket (in words),
    with sacreBLEU's 95% bootstrap interval; each row names the system's run (each one
    of `expected`'s, if given)."""
    if sorted(set(edges)) != list(edges) or not edges:
        raise MixnmtError(f"analysis.length_buckets: expected increasing word counts, got {edges}")
    made = compared(systems, expected, None, testset, sources, references)
    srcs, refs = read_aligned(sources, references)
    buckets = [bisect.bisect_left(edges, len(line.split())) for line in srcs]
    labels = bucket_labels(edges)
    chosen = {label: [i for i, bucket in enumerate(buckets) if bucket == b] for b, label in enumerate(labels)}
    # Each bucket's reference n-grams, extracted once for every system (sacreBLEU's cache);
    # a bucket without sentences has no BLEU.
    metrics = {label: BLEU(references=[[refs[i] for i in lines]]) for label, lines in chosen.items() if lines}
    rows = []
    for model, path in systems.items():
        hyps, _ = read_aligned(path, references)
        for label, lines in chosen.items():
            bleu, ci = math.nan, math.nan
            if lines:
                found = metrics[label].corpus_score([hyps[i] for i in lines], None, n_bootstrap=resamples)
                bleu, ci = round(found.score, 2), round(found._ci, 2)  # sacreBLEU's bootstrap
            rows.append(
                {
                    "testset": testset,
                    "model": model,
                    "bucket": label,
                    "sentences": len(lines),
                    "bleu": bleu,
                    "bleu_ci": ci,
                    **{k: (made[model] or {}).get(k) for k in ("seed", "fingerprint")},
                }
            )
    table = stamped(pd.DataFrame(rows))
    write_table(output, table)
    return table
