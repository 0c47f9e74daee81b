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


rule aggregate:
    input:
        scores=expand(f"{OUT}/scores/{{model}}/{{testset}}.json", model=MODELS, testset=TESTSETS),
        manifests=expand(f"{OUT}/train/{{model}}/manifest.json", model=MODELS),
    output:
        f"{OUT}/scores.tsv",
    log:
        logged("aggregate"),
    conda:
        "../../envs/text.yaml"
    shell:
        "mixnmt aggregate --scores {input.scores:q} --manifests {input.manifests:q} --output {output:q}"
        " 2> {log:q}"
