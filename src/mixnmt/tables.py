"""The report's tables that are not scores: cost per model, and what each mixture
component does."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mixnmt.evaluate import read_json, write_table


def cost(manifests: list[Path], speeds: list[Path], scores: Path, output: Path) -> pd.DataFrame:
    """Per model: size, training speed and time, decoding speed, peak memory, and its
    BLEU on the first test set (so the cost scatter needs nothing else)."""
    rows = []
    for manifest, speed in zip(map(read_json, manifests), map(read_json, speeds)):
        rows.append(
            {
                "model": manifest["model"],
                "params": manifest["params"],
                "steps": manifest["steps"],
                "train_tokens_per_s": round(manifest["tokens_per_s"], 1),
                "train_seconds": round(manifest["seconds"], 1),
                "greedy_sentences_per_s": round(speed["greedy_sentences_per_s"], 1),
                "beam_sentences_per_s": round(speed["beam_sentences_per_s"], 1),
                "train_peak_rss_mb": round(manifest["peak_memory"]["rss_mb"], 1),
                "decode_peak_rss_mb": round(speed["peak_memory"]["rss_mb"], 1),
                "device": manifest["device"],
            }
        )
    table = pd.DataFrame(rows)
    score_table = pd.read_csv(scores, sep="\t")
    first = score_table[score_table.testset == score_table.testset.iloc[0]]
    table = table.merge(first[["model", "testset", "bleu"]], on="model", how="left")
    write_table(output, table)
    return table


def components(analyses: list[Path], output: Path) -> pd.DataFrame:
    """One row per mixture component: its mean responsibility and the tokens read while
    it led, for every mixture of every model that has one."""
    rows = []
    for analysis in map(read_json, analyses):
        for mixture, stats in analysis["components"].items():
            for component, usage in enumerate(stats["usage"]):
                top = stats["top_tokens"].get(str(component), [])
                rows.append(
                    {
                        "model": analysis["model"],
                        "mixture": mixture,
                        "entropy": round(stats["entropy"], 3),
                        "component": "stay" if component == 0 else component,
                        "usage": usage,
                        "led": stats["led"].get(str(component), 0),
                        "top_tokens": " ".join(f"{piece}({n})" for piece, n in top),
                    }
                )
    table = pd.DataFrame(
        rows, columns=["model", "mixture", "entropy", "component", "usage", "led", "top_tokens"]
    )
    write_table(output, table)
    return table
