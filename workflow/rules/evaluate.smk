rule score:
    input:
        hypotheses=translation("{model}", "{testset}"),
        references=f"{OUT}/corpus/{{testset}}.{TGT}",
    output:
        f"{OUT}/scores/{run()}/{{testset}}.json",
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
        references=f"{OUT}/corpus/{{testset}}.{TGT}",
        systems=lambda w: systems(w.testset, w.seed).values(),
    output:
        f"{OUT}/significance/seed{{seed}}/{{testset}}.json",
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
    shell:
        "mixnmt significance --testset {wildcards.testset:q} --references {input.references:q}"
        " --baseline {params.baseline:q} --resamples {params.resamples} --seed {wildcards.seed}"
        " --output {output:q} {params.systems:q} 2> {log:q}"


rule contrasts:
    input:
        references=f"{OUT}/corpus/{{testset}}.{TGT}",
        runs=lambda w: contrasted_runs(w.testset).values(),
    output:
        f"{OUT}/contrasts/{{testset}}.json",
    log:
        logged("contrasts/{testset}"),
    group:
        "summary"
    conda:
        "../../envs/text.yaml"
    params:
        runs=lambda w, input: named(dict(zip(contrasted_runs(w.testset), input.runs))),
        pairs=[f"{a}:{b}" for a, b in config["analysis"]["contrasts"]],
        resamples=config["analysis"]["bootstrap"],
        margin=config["analysis"]["equivalence"],
    shell:
        "mixnmt contrasts --testset {wildcards.testset:q} --references {input.references:q}"
        " --pairs {params.pairs:q} --resamples {params.resamples} --margin {params.margin}"
        " --output {output:q} {params.runs:q} 2> {log:q}"


rule aggregate:
    input:
        scores=expand(
            f"{OUT}/scores/{run()}/{{testset}}.json",
            model=MODELS,
            seed=SEEDS,
            testset=TESTSETS,
        ),
        significance=INPUT_FILES["significance"],
        manifests=every_run(f"train/{run()}/manifest.json"),
        reliance=INPUT_FILES["reliance_runs"],
    output:
        table=report(
            f"{OUT}/scores.tsv", caption="../report/scores.rst", category="Tables"
        ),
        markdown=f"{OUT}/scores.md",
        metrics=f"{OUT}/scores.json",
    log:
        logged("aggregate"),
    group:
        "summary"
    conda:
        "../../envs/text.yaml"
    shell:
        "mixnmt aggregate --scores {input.scores:q} --significance {input.significance:q}"
        " --manifests {input.manifests:q} --reliance {input.reliance:q} --output {output.table:q}"
        " --markdown {output.markdown:q} --metrics {output.metrics:q} 2> {log:q}"
