rule decoding:  # a small JSON file: written where Snakemake runs, never a cluster job
    output:
        LAYOUT.decoding(),
    log:
        logged("decoding"),
    localrule: True
    conda:
        "../../envs/text.yaml"
    params:
        config=canonical(config["decode"]),
    shell:
        "mixnmt decoding --config {params.config:q} {output:q} 2> {log:q}"


rule translate:
    input:
        checkpoint=LAYOUT.checkpoint(),
        decoding=LAYOUT.decoding(),  # the settings the checkpoint carries: translate reads them
        source=ids("{testset}", SRC),
        spm=[spm_model(SRC), spm_model(TGT)],
    output:
        text=translation("{model}", "{testset}"),
        manifest=translation("{model}", "{testset}", suffix=".json"),
    log:
        logged(f"translate/{run()}/{{testset}}"),
    benchmark:
        benchmarked("translate")
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
        "mixnmt translate --checkpoint {input.checkpoint:q} --spm {input.spm[0]:q} --spm {input.spm[1]:q}"
        " --model {wildcards.model:q} --entry {params.entry:q}"
        " --threads {threads} --manifest {output.manifest:q}"
        " {input.source:q} {output.text:q} 2> {log:q}"
