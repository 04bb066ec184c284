"""File formats: the original BBRL ``.dat`` text format and bbrl's Parquet artefacts."""
