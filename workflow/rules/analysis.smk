rule lengths:
    input:
        sources=f"{OUT}/corpus/{{testset}}.{SRC}",
        references=f"{OUT}/corpus/{{testset}}.{TGT}",
        systems=lambda w: systems(w.testset).values(),
    output:
        f"{OUT}/tables/lengths/{{testset}}.tsv",
    params:
        systems=lambda w, input: named(dict(zip(MODELS, input.systems))),
        edges=config["analysis"]["length_buckets"],
    log:
        logged("lengths/{testset}"),
    conda:
        "../../envs/text.yaml"
    shell:
        "mixnmt lengths --testset {wildcards.testset:q} --sources {input.sources:q}"
        " --references {input.references:q} --edges {params.edges} --output {output:q}"
        " {params.systems:q} 2> {log:q}"


rule speed:
    input:
        checkpoint=f"{OUT}/checkpoints/{{model}}.pt",
        source=ids(FIRST_TEST, SRC),
        spm=[spm_model(SRC), spm_model(TGT)],
    output:
        f"{OUT}/speed/{{model}}.json",
    params:
        config=json.dumps(config["decode"]),
    log:
        logged("speed/{model}"),
    threads: 8
    resources:
        gpu=1,
        mem_mb=4000,
    conda:
        "../../envs/torch.yaml"
    shell:
        "mixnmt speed --model {wildcards.model:q} --checkpoint {input.checkpoint:q} --spm {input.spm:q}"
        " --config {params.config:q} --threads {threads} {input.source:q} {output:q} 2> {log:q}"


rule analyse:
    input:
        checkpoint=f"{OUT}/checkpoints/{{model}}.pt",
        source=ids(FIRST_TEST, SRC),
        translation=translation("{model}", FIRST_TEST),
        spm=[spm_model(SRC), spm_model(TGT)],
    output:
        f"{OUT}/analysis/{{model}}.json",
    params:
        sentences=config["analysis"]["sentences"],
    log:
        logged("analyse/{model}"),
    threads: 2
    resources:
        gpu=1,
        mem_mb=4000,
    conda:
        "../../envs/torch.yaml"
    shell:
        "mixnmt analyse --model {wildcards.model:q} --checkpoint {input.checkpoint:q} --spm {input.spm:q}"
        " --translation {input.translation:q} --sentences {params.sentences} --threads {threads}"
        " {input.source:q} {output:q} 2> {log:q}"


rule cost_table:
    input:
        manifests=expand(f"{OUT}/train/{{model}}/manifest.json", model=MODELS),
        speeds=expand(f"{OUT}/speed/{{model}}.json", model=MODELS),
        scores=f"{OUT}/scores.tsv",
    output:
        f"{OUT}/tables/cost.tsv",
    log:
        logged("cost_table"),
    conda:
        "../../envs/text.yaml"
    shell:
        "mixnmt table cost --manifests {input.manifests:q} --speeds {input.speeds:q}"
        " --scores {input.scores:q} --output {output:q} 2> {log:q}"


rule components_table:
    input:
        expand(f"{OUT}/analysis/{{model}}.json", model=MODELS),
    output:
        f"{OUT}/tables/components.tsv",
    log:
        logged("components_table"),
    conda:
        "../../envs/text.yaml"
    shell:
        "mixnmt table components --analyses {input:q} --output {output:q} 2> {log:q}"
