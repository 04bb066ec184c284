# Stage 6: one table per experiment (every agent, every test MDP), chunks concatenated.


def merge_inputs(wildcards):
    return all_chunks(wildcards.experiment)


rule merge:
    input:
        merge_inputs,
    output:
        f"{R}/merged/{{experiment}}.parquet",
    log:
        f"{R}/logs/merge/{{experiment}}.log",
    params:
        version=VERSION,
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        CONDA_ENV
    shell:
        "{BBRL} merge {input} -o {output} > {log} 2>&1"
