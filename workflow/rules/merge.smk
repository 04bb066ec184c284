# Stage 6: one table per experiment (every agent, every test MDP), chunks concatenated.


rule merge:
    input:
        runs=merge_inputs,
        test_set=merge_test_set,
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
        "bbrl --log {log:q} merge {input.runs:q} --test-sets {input.test_set:q} -o {output:q}"


rule merge_validation:
    """One table per experiment of the runs on its validation set (selection:
    validation): what chooses each algorithm's configuration."""
    input:
        runs=merge_validation_inputs,
        test_set=merge_validation_test_set,
    output:
        f"{R}/merged_validation/{{experiment}}.parquet",
    log:
        f"{R}/logs/merge_validation/{{experiment}}.log",
    conda:
        CONDA_ENV
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        version=VERSION,
    shell:
        "bbrl --log {log:q} merge {input.runs:q} --test-sets {input.test_set:q} -o {output:q}"
