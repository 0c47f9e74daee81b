"""Withdrawn verdicts: docs/withdrawn.yaml names them, the claims table and figure mark
them, and a withdrawal of no published claim, or one malformed, is refused in one line."""

from __future__ import annotations

import pytest
import yaml

from conftest import ROOT

PUBLISHED = ROOT / "results/multi30k-cpu-states"


@pytest.fixture
def studies(monkeypatch):
    """One published experiment with one claim: its folder and configuration."""
    from mixnmt.verify import configuration

    monkeypatch.chdir(ROOT)
    return {PUBLISHED: configuration(PUBLISHED, [])}


def test_a_withdrawn_verdict_keeps_its_row_and_numbers_and_says_why(studies, tmp_path):
    """The row keeps the cell its table gives, followed by why it was withdrawn; the
    figure's point is marked withdrawn; a claim not listed is unmarked."""
    from mixnmt.readme import claim_points, claims_table, withdrawn_verdicts

    path = tmp_path / "withdrawn.yaml"
    entry = {"a": "mixture-summary-gated", "b": "mixture-states-gated", "why": "the states models loop"}
    path.write_text(yaml.safe_dump({"multi30k-cpu-states": [entry]}))
    withdrawn = withdrawn_verdicts(studies, path)
    assert withdrawn == {("multi30k-cpu-states", entry["a"], entry["b"]): "the states models loop"}
    (standing,) = claims_table(studies)["B - A"]
    assert standing.startswith("**") and "withdrawn" not in standing
    assert claims_table(studies, withdrawn=withdrawn)["B - A"].tolist() == [
        f"{standing}, withdrawn: the states models loop"
    ]
    assert claim_points(studies, withdrawn).withdrawn.tolist() == [True]
    assert claim_points(studies).withdrawn.tolist() == [False]
    path.write_text("")  # nothing withdrawn
    assert withdrawn_verdicts(studies, path) == {}


@pytest.mark.parametrize(
    ("entries", "error"),
    [
        (
            {"multi30k-cpu-states": [{"a": "x", "b": "y"}]},
            "multi30k-cpu-states.0: 'why' is a required property",
        ),
        (
            {"multi30k-cpu-states": [{"a": "x", "b": "y", "why": ""}]},
            "multi30k-cpu-states.0.why: '' should be non-empty",
        ),
        (
            {"multi30k-cpu-states": [{"a": "x", "b": "y", "why": "w", "when": 1}]},
            "multi30k-cpu-states.0: Additional properties",
        ),
        ({"multi30k-cpu-states": {"a": "x"}}, "multi30k-cpu-states: {'a': 'x'} is not of type 'array'"),
        (["multi30k-cpu-states"], "expected a config mapping, got a list"),
        (
            {
                "multi30k-cpu-states": [
                    {"a": "mixture-states-gated", "b": "mixture-summary-gated", "why": "w"}
                ]
            },
            "multi30k-cpu-states: no published contrast of mixture-states-gated against "
            "mixture-summary-gated makes a claim to withdraw",
        ),
        (
            {"multi30k-cpu": [{"a": "mixture-summary-gated", "b": "mixture-states-gated", "why": "w"}]},
            "multi30k-cpu: no published contrast of mixture-summary-gated against "
            "mixture-states-gated makes a claim to withdraw",
        ),
        (
            {
                "multi30k-cpu-states": [
                    {"a": "mixture-summary-gated", "b": "mixture-states-gated", "why": "w"},
                    {"a": "mixture-summary-gated", "b": "mixture-states-gated", "why": "v"},
                ]
            },
            "multi30k-cpu-states: mixture-summary-gated against mixture-states-gated is withdrawn twice",
        ),
    ],
    ids=[
        "no why",
        "empty why",
        "unknown key",
        "not a list",
        "not a mapping",
        "reversed",
        "not published",
        "twice",
    ],
)
def test_a_withdrawal_that_is_malformed_or_withdraws_no_published_claim_is_refused_in_one_line(
    studies, tmp_path, entries, error
):
    from mixnmt import MixnmtError
    from mixnmt.readme import withdrawn_verdicts

    path = tmp_path / "withdrawn.yaml"
    path.write_text(yaml.safe_dump(entries))
    with pytest.raises(MixnmtError) as refused:
        withdrawn_verdicts(studies, path)
    message = str(refused.value)
    assert message.startswith(f"{path}: {error}") and "\n" not in message


def test_the_committed_withdrawals_are_marked_in_the_readme(monkeypatch):
    """Each verdict docs/withdrawn.yaml withdraws is a published claim, and its README row
    says so, with why."""
    from mixnmt.readme import published_studies, withdrawn_verdicts
    from mixnmt.withdrawn import WITHDRAWN

    monkeypatch.chdir(ROOT)
    studies, _ = published_studies(ROOT / "docs/results.md", ROOT / "results")
    withdrawn = withdrawn_verdicts(studies, ROOT / WITHDRAWN)
    assert withdrawn, "docs/withdrawn.yaml withdraws nothing"
    rows = [line for line in (ROOT / "README.md").read_text().splitlines() if ", withdrawn: " in line]
    assert sorted((line.split("`")[1], line.split("`")[3], line.split("`")[5]) for line in rows) == sorted(
        withdrawn
    )
    for line in rows:
        experiment, a, b = line.split("`")[1], line.split("`")[3], line.split("`")[5]
        assert line.split(" |")[-3].endswith(f", withdrawn: {withdrawn[experiment, a, b]}")
