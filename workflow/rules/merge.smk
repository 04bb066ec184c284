# Stage 6: one table per experiment (every agent, every test MDP), chunks concatenated.


rule merge:
    input:
        merge_inputs,
    output:
        f"{R}/merged/{{experiment}}.parquet",
    log:
        f"{R}/logs/merge/{{experiment}}.log",
    conda:
        CONDA_ENV
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        version=VERSION,
    shell:
        "bbrl --log {log:q} merge {input:q} -o {output:q}"
