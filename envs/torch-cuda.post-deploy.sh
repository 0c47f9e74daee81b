#!/usr/bin/env bash
# Install the mixnmt package itself (editable, so rules always run the checked-out code).
# Snakemake runs this from its working directory: the project root.
set -euo pipefail
pip install --no-deps -e .
