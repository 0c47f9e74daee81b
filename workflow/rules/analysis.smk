rule lengths:
    input:
        sources=f"{OUT}/corpus/{{testset}}.{SRC}",
        references=f"{OUT}/corpus/{{testset}}.{TGT}",
        systems=lambda w: systems(w.testset, FIRST_SEED).values(),
    output:
        f"{OUT}/tables/lengths/{{testset}}.tsv",
    log:
        logged("lengths/{testset}"),
    group:
        "summary"
    conda:
        "../../envs/text.yaml"
    params:
        systems=lambda w, input: named(dict(zip(MODELS, input.systems))),
        edges=config["analysis"]["length_buckets"],
        resamples=config["analysis"]["bootstrap"],
    shell:
        "mixnmt lengths --testset {wildcards.testset:q} --sources {input.sources:q}"
        " --references {input.references:q} --edges {params.edges} --resamples {params.resamples}"
        " --output {output:q}"
        " {params.systems:q} 2> {log:q}"


rule speed:
    input:
        checkpoint=LAYOUT.checkpoint(seed=FIRST_SEED),
        source=ids(FIRST_TEST, SRC),
        spm=[spm_model(SRC), spm_model(TGT)],
    output:
        f"{OUT}/speed/{{model}}.json",
    log:
        logged("speed/{model}"),
    benchmark:
        benchmarked("speed")
    conda:
        "../../envs/torch.yaml"
    threads: lambda wildcards: workflow.cores if workflow.local_exec else 8
    resources:
        gpu=model_gpu,
        gpu_jobs=gpu_jobs(WHOLE_GPU),
        mem_mb=4000,
    params:
        config=json.dumps(config["decode"]),
        entry=entry,
        sentences=config["analysis"]["speed_sentences"],
    shell:
        "mixnmt speed --model {wildcards.model:q} --entry {params.entry:q}"
        " --checkpoint {input.checkpoint:q} --spm {input.spm:q} --sentences {params.sentences}"
        " --config {params.config:q} --threads {threads} {input.source:q} {output:q} 2> {log:q}"


rule reliance:
    input:
        checkpoint=LAYOUT.checkpoint(),
        valid=[ids("valid", SRC), ids("valid", TGT)],
        spm=[spm_model(SRC), spm_model(TGT)],
    output:
        reliance=f"{OUT}/reliance/{run()}.tsv",
        use=f"{OUT}/use/{run()}.tsv",
    log:
        logged(f"reliance/{run()}"),
    benchmark:
        benchmarked("reliance")
    priority: seed_priority
    conda:
        "../../envs/torch.yaml"
    threads: model_threads(2)
    resources:
        gpu=model_gpu,
        gpu_jobs=gpu_jobs(),
        mem_mb=4000,
    params:
        entry=entry,
        max_tokens=config["train"]["max_tokens"],
    shell:
        "mixnmt reliance --model {wildcards.model:q} --entry {params.entry:q}"
        " --checkpoint {input.checkpoint:q} --spm {input.spm:q} --valid {input.valid:q}"
        " --seed {wildcards.seed} --max-tokens {params.max_tokens} --threads {threads}"
        " --use {output.use:q} {output.reliance:q} 2> {log:q}"


rule analyse:
    input:
        checkpoint=LAYOUT.checkpoint(seed=FIRST_SEED),
        source=ids(FIRST_TEST, SRC),
        references=f"{OUT}/corpus/{FIRST_TEST}.{TGT}",
        translation=translation("{model}", FIRST_TEST, FIRST_SEED),
        spm=[spm_model(SRC), spm_model(TGT)],
    output:
        f"{OUT}/analysis/{{model}}.json",
    log:
        logged("analyse/{model}"),
    benchmark:
        benchmarked("analyse")
    conda:
        "../../envs/torch.yaml"
    threads: model_threads(2)
    resources:
        gpu=model_gpu,
        gpu_jobs=gpu_jobs(),
        mem_mb=4000,
    params:
        sentences=config["analysis"]["sentences"],
        entry=entry,
    shell:
        "mixnmt analyse --model {wildcards.model:q} --entry {params.entry:q}"
        " --checkpoint {input.checkpoint:q} --spm {input.spm:q}"
        " --translation {input.translation:q} --references {input.references:q} --sentences {params.sentences} --threads {threads}"
        " {input.source:q} {output:q} 2> {log:q}"


rule silver:
    input:
        train=[f"{OUT}/corpus/train.{SRC}", f"{OUT}/corpus/train.{TGT}"],
        test=[f"{OUT}/corpus/{FIRST_TEST}.{SRC}", f"{OUT}/corpus/{FIRST_TEST}.{TGT}"],
    output:
        SILVER,
    log:
        logged("silver"),
    conda:
        "../../envs/align.yaml"
    threads: 3  # eflomal's samplers
    params:
        settings=json.dumps(config["analysis"]["aligner"]),
    shell:
        "mixnmt silver --train {input.train:q} --test {input.test:q}"
        " --settings {params.settings:q} {output:q} 2> {log:q}"


# One rule per table of mixnmt.tables.TABLES (table_<name>).
for name, spec in TABLES.items():

    rule:
        name:
            f"table_{name}"
        input:
            **inputs_of(spec.inputs),
        output:
            report(table(name), category="Tables", labels={"table": name}),
        log:
            logged(f"table/{name}"),
        group:
            "summary"
        conda:
            "../../envs/text.yaml"
        params:
            args=input_args(spec.inputs),
            name=name,
        shell:
            "mixnmt table {params.name:q} {params.args:q} --output {output:q} 2> {log:q}"
