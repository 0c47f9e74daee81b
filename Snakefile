# mixnmt: attention as a mixture model, compared on English->German translation.
# Table of contents: data (download, prepare) -> tokenize (spm) -> train -> translate
# -> evaluate (score, significance, aggregate) -> analysis (length buckets, speed,
# weights, tables) -> report (figures, report.html). Helpers live in rules/common.smk;
# rules/targets.smk names the targets of the stages in dvc.yaml.

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import min_version

from mixnmt import MixnmtError
from mixnmt.config import MAX_NODES, cpu_notice, nodes, read

min_version("9.0")

# Snakemake merges the overlays (--configfile) and single keys (--config) onto config.yaml
# at `configfile:`; YAML aliases that expand to billions of values would hang that merge,
# and plain YAML would take a key given twice silently, so each is read (and refused, if
# so) first.
try:
    for overlay in ["config.yaml", *workflow.config_settings.configfiles]:
        read(overlay)
    if nodes(workflow.config_settings.overwrite_config) > MAX_NODES:
        raise MixnmtError(
            f"--config: expands to more than {MAX_NODES} values (YAML aliases?); refused"
        )
except MixnmtError as e:
    raise WorkflowError(f"config: {e}") from None


configfile: "config.yaml"


# One image for every rule under `--software-deployment-method apptainer`
# (workflow/container/mixnmt.def); the conda environments otherwise.
container: config["container"]


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
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
        LAYOUT.report,


onstart:
    # A newcomer without a GPU learns how long the training this run does takes here.
    if cpu_only():
        runs = sum(job.rule.name == "train" for job in workflow.dag.needrun_jobs())
        notice = cpu_notice(config, workflow.cores, runs)
        if notice:
            logger.warning(notice)
