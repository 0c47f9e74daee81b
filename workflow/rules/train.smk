rule train:
    input:
        train=[ids("train", SRC), ids("train", TGT)],
        valid=[ids("valid", SRC), ids("valid", TGT)],
        spm=[spm_model(SRC), spm_model(TGT)],
    output:
        checkpoint=LAYOUT.checkpoint(),
        metrics=LAYOUT.train("metrics.tsv"),
        manifest=LAYOUT.train("manifest.json"),
    log:
        logged(f"train/{run()}"),
    benchmark:
        benchmarked("train")
    wildcard_constraints:
        model=alternatives(TRAINED),
    priority: seed_priority
    conda:
        TORCH_ENV
    threads: model_threads(8)
    resources:
        gpu=model_gpu,
        gpu_jobs=train_gpu_jobs,
        mem_mb=8000,
    params:
        entry=entry,
        config=train_config,
        data=DATA,
        state=LAYOUT.state(),  # no output: survives a failed job, and DVC; rerun to resume
    shell:
        "mixnmt train --model {wildcards.model:q} --entry {params.entry:q}"
        " --config {params.config:q} --data {params.data:q} --threads {threads}"
        " --train {input.train:q} --valid {input.valid:q} --spm {input.spm:q}"
        " --checkpoint {output.checkpoint:q} --metrics {output.metrics:q} --manifest {output.manifest:q}"
        " --state {params.state:q} 2> {log:q}"


rule share:  # a decoding variant's run: its trained twin's, kept as its own
    input:
        twin=lambda w: [
            LAYOUT.checkpoint(TWINS[w.model], w.seed),
            LAYOUT.train("metrics.tsv", TWINS[w.model], w.seed),
            LAYOUT.train("manifest.json", TWINS[w.model], w.seed),
        ],
    output:
        checkpoint=LAYOUT.checkpoint(),
        metrics=LAYOUT.train("metrics.tsv"),
        manifest=LAYOUT.train("manifest.json"),
    log:
        logged(f"share/{run()}"),
    wildcard_constraints:
        model=alternatives(SHARED),
    conda:
        TORCH_ENV
    params:
        entry=entry,
        config=train_config,
        data=DATA,
    shell:
        "mixnmt share --model {wildcards.model:q} --entry {params.entry:q}"
        " --config {params.config:q} --data {params.data:q} --twin {input.twin:q}"
        " --checkpoint {output.checkpoint:q} --metrics {output.metrics:q} --manifest {output.manifest:q}"
        " 2> {log:q}"
