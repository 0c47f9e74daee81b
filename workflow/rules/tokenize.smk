rule spm_train:
    input:
        spm_training_text,
    output:
        LAYOUT.spm(),
    log:
        logged("spm_train/{name}"),
    group:
        "data"
    conda:
        "../../envs/text.yaml"
    params:
        spm=config["spm"],
    shell:
        "mixnmt spm-train --input {input:q} --model {output:q}"
        " --vocab-size {params.spm[vocab_size]} --model-type {params.spm[model_type]:q}"
        " --character-coverage {params.spm[character_coverage]} --seed {params.spm[seed]}"
        " 2> {log:q}"


rule spm_encode:
    input:
        text=corpus(),
        model=lambda w: spm_model(w.lang),
    output:
        ids("{split}", "{lang}"),
    log:
        logged("spm_encode/{split}.{lang}"),
    group:
        "data"
    conda:
        "../../envs/text.yaml"
    shell:
        "mixnmt spm-encode --model {input.model:q} {input.text:q} {output:q} 2> {log:q}"
