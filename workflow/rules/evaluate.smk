rule score:
    input:
        hypotheses=translation("{model}", "{testset}"),
        record=translation("{model}", "{testset}", suffix=".json"),
        references=corpus("{testset}", TGT),
    output:
        LAYOUT.score(),
    log:
        logged(f"score/{run()}/{{testset}}"),
    group:
        "summary"
    conda:
        "../../envs/text.yaml"
    shell:
        "mixnmt score --model {wildcards.model:q} --testset {wildcards.testset:q} --seed {wildcards.seed}"
        " {input.hypotheses:q} {input.references:q} {output:q} 2> {log:q}"


rule significance:
    input:
        references=corpus("{testset}", TGT),
        systems=lambda w: systems(w.testset, w.seed).values(),
        records=lambda w: systems(w.testset, w.seed, ".json").values(),
    output:
        LAYOUT.significance(),
    log:
        logged("significance/seed{seed}/{testset}"),
    group:
        "summary"
    conda:
        "../../envs/text.yaml"
    params:
        systems=lambda w, input: named(dict(zip(MODELS, input.systems))),
        baseline=config["analysis"]["baseline"],
        resamples=config["analysis"]["bootstrap"],
        runs=RUNS,
    shell:
        "mixnmt significance --testset {wildcards.testset:q} --references {input.references:q}"
        " --baseline {params.baseline:q} --resamples {params.resamples} --seed {wildcards.seed}"
        " --runs {params.runs:q} --output {output:q} {params.systems:q} 2> {log:q}"


rule contrasts:
    input:
        references=corpus("{testset}", TGT),
        runs=lambda w: contrasted_runs(w.testset).values(),
        records=lambda w: contrasted_runs(w.testset, ".json").values(),
    output:
        LAYOUT.contrasts(),
    log:
        logged("contrasts/{testset}"),
    group:
        "summary"
    conda:
        "../../envs/text.yaml"
    params:
        translations=lambda w, input: named(
            dict(zip(contrasted_runs(w.testset), input.runs))
        ),
        pairs=[f"{a}:{b}" for a, b in config["analysis"]["contrasts"]],
        resamples=config["analysis"]["bootstrap"],
        margin=config["analysis"]["equivalence"],
        primary=lambda w: primary_metric(w.testset),
        statistic=config["analysis"]["statistic"],
        runs=RUNS,
    shell:
        "mixnmt contrasts --testset {wildcards.testset:q} --references {input.references:q}"
        " --pairs {params.pairs:q} --resamples {params.resamples} --margin {params.margin}"
        " {params.primary:q} --statistic {params.statistic:q} --runs {params.runs:q}"
        " --output {output:q} {params.translations:q}"
        " 2> {log:q}"


rule aggregate:
    input:
        scores=expand(
            LAYOUT.score(),
            model=MODELS,
            seed=SEEDS,
            testset=TESTSETS,
        ),
        significance=INPUT_FILES["significance"],
        manifests=every_run(LAYOUT.train("manifest.json")),
        reliance=INPUT_FILES["reliance_runs"],
    output:
        table=report(
            LAYOUT.summary("tsv"), caption="../report/scores.rst", category="Tables"
        ),
        markdown=LAYOUT.summary("md"),
        metrics=LAYOUT.summary("json"),
    log:
        logged("aggregate"),
    group:
        "summary"
    conda:
        "../../envs/text.yaml"
    params:
        runs=RUNS,
    shell:
        "mixnmt aggregate --scores {input.scores:q} --significance {input.significance:q}"
        " --manifests {input.manifests:q} --reliance {input.reliance:q} --output {output.table:q}"
        " --markdown {output.markdown:q} --metrics {output.metrics:q} --runs {params.runs:q} 2> {log:q}"


rule headline:
    input:
        LAYOUT.summary(),
    output:
        expand(LAYOUT.headline(), model=MODELS, testset=TESTSETS),
    log:
        logged("headline"),
    group:
        "summary"
    conda:
        "../../envs/text.yaml"
    shell:
        "mixnmt headline {input:q} --output {output:q} 2> {log:q}"
