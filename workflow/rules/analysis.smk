rule lengths:
    input:
        sources=corpus("{testset}", SRC),
        references=corpus("{testset}", TGT),
        systems=lambda w: systems(w.testset, FIRST_SEED).values(),
        records=lambda w: systems(w.testset, FIRST_SEED, ".json").values(),
    output:
        table("lengths/{testset}"),
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
        runs=RUNS,
    shell:
        "mixnmt lengths --testset {wildcards.testset:q} --sources {input.sources:q}"
        " --references {input.references:q} --edges {params.edges} --resamples {params.resamples}"
        " --runs {params.runs:q} --output {output:q} {params.systems:q} 2> {log:q}"


rule speed:
    input:
        checkpoint=LAYOUT.checkpoint(seed=FIRST_SEED),
        decoding=LAYOUT.decoding(),  # read beside the checkpoint, as translate reads them
        source=ids(FIRST_TEST, SRC),
        spm=[spm_model(SRC), spm_model(TGT)],
    output:
        LAYOUT.per_model("speed"),
    log:
        logged("speed/{model}"),
    benchmark:
        benchmarked("speed")
    conda:
        TORCH_ENV
    threads: lambda wildcards: workflow.cores if workflow.local_exec else 8
    resources:
        gpu=model_gpu,
        gpu_jobs=gpu_jobs(WHOLE_GPU),
        mem_mb=4000,
    params:
        entry=entry,
        sentences=config["analysis"]["speed_sentences"],
    shell:
        "mixnmt speed --model {wildcards.model:q} --entry {params.entry:q}"
        " --checkpoint {input.checkpoint:q} --spm {input.spm[0]:q} --spm {input.spm[1]:q} --sentences {params.sentences}"
        " --threads {threads} {input.source:q} {output:q} 2> {log:q}"


rule reliance:
    input:
        checkpoint=LAYOUT.checkpoint(),
        valid=[ids("valid", SRC), ids("valid", TGT)],
        spm=[spm_model(SRC), spm_model(TGT)],
    output:
        reliance=LAYOUT.reliance(),
        use=LAYOUT.reliance(kind="use"),
    log:
        logged(f"reliance/{run()}"),
    benchmark:
        benchmarked("reliance")
    priority: seed_priority
    conda:
        TORCH_ENV
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
        " --checkpoint {input.checkpoint:q} --spm {input.spm[0]:q} --spm {input.spm[1]:q} --valid {input.valid:q}"
        " --seed {wildcards.seed} --max-tokens {params.max_tokens} --threads {threads}"
        " --use {output.use:q} {output.reliance:q} 2> {log:q}"


rule analyse:
    input:
        checkpoint=LAYOUT.checkpoint(seed=FIRST_SEED),
        source=ids(FIRST_TEST, SRC),
        references=corpus(FIRST_TEST, TGT),
        translation=translation("{model}", FIRST_TEST, FIRST_SEED),
        record=translation("{model}", FIRST_TEST, FIRST_SEED, suffix=".json"),
        spm=[spm_model(SRC), spm_model(TGT)],
    output:
        LAYOUT.per_model("analysis"),
    log:
        logged("analyse/{model}"),
    benchmark:
        benchmarked("analyse")
    conda:
        TORCH_ENV
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
        " --checkpoint {input.checkpoint:q} --spm {input.spm[0]:q} --spm {input.spm[1]:q}"
        " --translation {input.translation:q} --references {input.references:q} --sentences {params.sentences} --threads {threads}"
        " {input.source:q} {output:q} 2> {log:q}"


rule align:
    input:
        checkpoint=LAYOUT.checkpoint(),
        source=ids(FIRST_TEST, SRC),
        references=corpus(FIRST_TEST, TGT),
        spm=[spm_model(SRC), spm_model(TGT)],
    output:
        LAYOUT.word_alignments(),
    log:
        logged(f"align/{run()}"),
    benchmark:
        benchmarked("align")
    priority: seed_priority
    conda:
        TORCH_ENV
    threads: model_threads(2)
    resources:
        gpu=model_gpu,
        gpu_jobs=gpu_jobs(),
        mem_mb=4000,
    params:
        entry=entry,
    shell:
        "mixnmt align --model {wildcards.model:q} --entry {params.entry:q}"
        " --checkpoint {input.checkpoint:q} --spm {input.spm[0]:q} --spm {input.spm[1]:q}"
        " --references {input.references:q} --threads {threads} {input.source:q} {output:q} 2> {log:q}"


rule silver:
    input:
        train=[corpus("train", SRC), corpus("train", TGT)],
        test=[corpus(FIRST_TEST, SRC), corpus(FIRST_TEST, TGT)],
    output:
        SILVER,
    log:
        logged("silver"),
    conda:
        "../../envs/align.yaml"
    threads: 3  # eflomal's samplers
    params:
        settings=canonical(config["analysis"]["aligner"]),
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
            runs=RUNS,
        shell:
            "mixnmt table {params.name:q} {params.args:q} --runs {params.runs:q} --output {output:q}"
            " 2> {log:q}"
