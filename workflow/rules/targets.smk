# Named targets, one per stage of dvc.yaml: DVC decides whether a stage runs, and the
# stage asks Snakemake for its target.


rule tokenized:
    input:
        [corpus(split, lang) for split in SPLITS for lang in (SRC, TGT)],
        [spm_model(lang) for lang in (SRC, TGT)],
        [ids(split, lang) for split in ("train", "valid") for lang in (SRC, TGT)],
        [ids(testset, SRC) for testset in TESTSETS],


for name in MODELS:

    rule:
        name:
            f"trained_{name}"
        input:
            [LAYOUT.checkpoint(name, seed) for seed in SEEDS],

    rule:
        name:
            f"evaluated_{name}"
        input:
            [translation(name, t, seed) for t in TESTSETS for seed in SEEDS],
            [LAYOUT.score(name, t, seed) for t in TESTSETS for seed in SEEDS],
            [LAYOUT.reliance(name, seed) for seed in SEEDS],
            [LAYOUT.reliance(name, seed, "use") for seed in SEEDS],
            [LAYOUT.word_alignments(name, seed) for seed in SEEDS],
            LAYOUT.per_model("speed", name),
            LAYOUT.per_model("analysis", name),
