"""The configuration: each file read (and refused in one line) before Snakemake merges
them, config.yaml with the overlays merged, then the schema and the checks it cannot say.
"""

import jsonschema

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from mixnmt import MixnmtError
from mixnmt.config import MAX_NODES, check, check_strictly, merge, nodes, read, typed
from mixnmt.schema import schema_error

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


# --config's booleans and numbers as a config file gives them (Snakemake keeps
# `allow_cpu=true` and the values inside `seeds=[1,2]` as strings)
config.update(merge(config, typed(workflow.config_settings.overwrite_config)))


SCHEMA = f"{workflow.basedir}/workflow/schemas/config.schema.yaml"
try:
    validate(config, SCHEMA)
except WorkflowError as e:  # one line for the key at fault, not the whole schema
    if not isinstance(e.__context__, jsonschema.ValidationError):
        raise
    raise WorkflowError(f"config: {schema_error(e.__context__)}") from None
try:
    check_strictly(config, SCHEMA)
    check(config)
except MixnmtError as e:
    raise WorkflowError(f"config: {e}") from None


# One image for every rule under `--software-deployment-method apptainer`
# (workflow/container/mixnmt.def); the conda environments otherwise.
container: config["container"]
