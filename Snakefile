# mixnmt: attention as a mixture model, compared on English->German translation.
# Table of contents: data (download, prepare) -> tokenize (spm) -> train -> translate
# -> evaluate (score, aggregate). Helpers and config checks live in rules/common.smk.

from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/tokenize.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/translate.smk"
include: "workflow/rules/evaluate.smk"


rule all:
    default_target: True
    input:
        f"{OUT}/scores.tsv",
