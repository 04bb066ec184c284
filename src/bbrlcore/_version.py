"""The static version of bbrlcore (Snakemake staleness and artefacts record it)."""

__version__ = "0.1.0"
