#!/usr/bin/env bash
# Run by Snakemake inside the freshly created env (from the directory snakemake runs in,
# the repository root): install bbrlcore itself from this checkout. Override the source
# with BBRL_SOURCE=/path/to/checkout.
set -euo pipefail
pip install --no-deps "${BBRL_SOURCE:-$PWD}"
