rule download:
    output:
        "data/{dataset}/{file}",
    log:
        logged("download/{dataset}/{file}"),
    group:
        "data"
    conda:
        "../../envs/text.yaml"
    params:
        base=download_base,
        sha256=lambda w: pinned(config, w.dataset, w.file)["sha256"],
        size=lambda w: pinned(config, w.dataset, w.file)["size"],
    shell:
        "mixnmt download {params.base:q} {output:q} --sha256 {params.sha256:q} --size {params.size}"
        " 2> {log:q}"


rule prepare:
    input:
        src=lambda w: raw_file(w.split, SRC),
        tgt=lambda w: raw_file(w.split, TGT),
    output:
        src=corpus(lang=SRC),
        tgt=corpus(lang=TGT),
    log:
        logged("prepare/{split}"),
    group:
        "data"
    conda:
        "../../envs/text.yaml"
    params:
        args=lambda w: prepare_arguments(config, w.split),
    shell:
        "mixnmt prepare {input.src:q} {input.tgt:q} {output.src:q} {output.tgt:q} {params.args:q}"
        " 2> {log:q}"
