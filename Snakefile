# mixnmt: attention as a mixture model, compared on English->German translation.
# Table of contents: config (read, merge, check) -> data (download, prepare) -> tokenize
# (spm) -> train -> translate -> evaluate (score, significance, aggregate) -> analysis
# (length buckets, speed, weights, tables) -> report (figures, report.html). Helpers live
# in rules/common.smk and rules/resources.smk; rules/targets.smk names the targets of the
# stages in dvc.yaml.

from snakemake.utils import min_version

min_version("9.0")


report: "workflow/report/workflow.rst"


include: "workflow/rules/config.smk"
include: "workflow/rules/common.smk"
include: "workflow/rules/resources.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/tokenize.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/translate.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/targets.smk"


rule all:
    default_target: True
    input:
        LAYOUT.summary(),
        rules.headline.output,
        LAYOUT.report,
