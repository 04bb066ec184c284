# Stage 2: OPPS-DS formula sets F2..F6 (enumerated, reduced on random points).


def _fs_setting(wildcards, key, default=None):
    return config["formula_sets"][wildcards.fs].get(key, default)


rule formula_set:
    output:
        f"{R}/formula_sets/{{fs}}.parquet",
    log:
        f"{R}/logs/formula_sets/{{fs}}.log",
    params:
        max_size=lambda wc: _fs_setting(wc, "max_size"),
        seed=lambda wc: _fs_setting(wc, "seed", 1),
        version=VERSION,
    resources:
        mem_mb=lambda wc: 16000 if _fs_setting(wc, "max_size") >= 6 else 4000,
        runtime=lambda wc: 600 if _fs_setting(wc, "max_size") >= 6 else 60,
    conda:
        CONDA_ENV
    shell:
        "{BBRL} formulas generate --max-size {params.max_size} --seed {params.seed}"
        " -o {output} > {log} 2>&1"
