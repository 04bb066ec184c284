# Stage 4: one test set per test distribution (shared by its accurate and inaccurate
# experiments, so agents are paired across priors).


rule test_set:
    input:
        f"{R}/distributions/{{test}}.parquet",
    output:
        f"{R}/test_sets/{{test}}.parquet",
    log:
        f"{R}/logs/test_sets/{{test}}.log",
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        n=config["n_mdps"],
        gamma=config["gamma"],
        horizon=config["horizon"],
        seed=config["test_seed"],
        version=VERSION,
    shell:
        "bbrl --log {log:q} experiment new --test {input:q} --n-mdps {params.n}"
        " --gamma {params.gamma} --horizon {params.horizon} --seed {params.seed}"
        " -o {output:q}"
