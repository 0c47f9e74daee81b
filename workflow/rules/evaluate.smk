rule score:
    input:
        hypotheses=f"{OUT}/translations/{{model}}/{{testset}}.txt",
        references=f"{OUT}/corpus/{{testset}}.{TGT}",
    output:
        f"{OUT}/scores/{{model}}/{{testset}}.json",
    log:
        logged("score/{model}/{testset}"),
    conda:
        "../../envs/text.yaml"
    shell:
        "mixnmt score --model {wildcards.model:q} --testset {wildcards.testset:q}"
        " {input.hypotheses:q} {input.references:q} {output:q} 2> {log:q}"


rule significance:
    input:
        references=f"{OUT}/corpus/{{testset}}.{TGT}",
        systems=lambda w: systems(w.testset).values(),
    output:
        f"{OUT}/significance/{{testset}}.json",
    log:
        logged("significance/{testset}"),
    conda:
        "../../envs/text.yaml"
    params:
        systems=lambda w, input: named(dict(zip(MODELS, input.systems))),
        baseline=config["analysis"]["baseline"],
        resamples=config["analysis"]["bootstrap"],
    shell:
        "mixnmt significance --testset {wildcards.testset:q} --references {input.references:q}"
        " --baseline {params.baseline:q} --resamples {params.resamples} --output {output:q}"
        " {params.systems:q} 2> {log:q}"


rule aggregate:
    input:
        scores=expand(
            f"{OUT}/scores/{{model}}/{{testset}}.json", model=MODELS, testset=TESTSETS
        ),
        significance=expand(f"{OUT}/significance/{{testset}}.json", testset=TESTSETS),
        manifests=INPUT_FILES["manifests"],
    output:
        table=f"{OUT}/scores.tsv",
        markdown=f"{OUT}/scores.md",
        metrics=f"{OUT}/scores.json",
    log:
        logged("aggregate"),
    conda:
        "../../envs/text.yaml"
    shell:
        "mixnmt aggregate --scores {input.scores:q} --significance {input.significance:q}"
        " --manifests {input.manifests:q} --output {output.table:q} --markdown {output.markdown:q}"
        " --metrics {output.metrics:q} 2> {log:q}"
