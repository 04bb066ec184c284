# Stage 2: OPPS-DS formula sets F2..F6 (enumerated, reduced on random points).


rule formula_set:
    output:
        f"{R}/formula_sets/{{fs}}.parquet",
    log:
        f"{R}/logs/formula_sets/{{fs}}.log",
    conda:
        CONDA_ENV
    resources:
        mem_mb=fs_mem,
        runtime=fs_runtime,
    params:
        max_size=fs_max_size,
        seed=fs_seed,
        version=VERSION,
    shell:
        "bbrl --log {log:q} formulas generate --max-size {params.max_size}"
        " --seed {params.seed} -o {output:q}"
