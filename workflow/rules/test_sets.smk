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


rule validation_set:
    """The validation set of a test distribution (selection: validation): validation_mdps
    MDPs with the test set's distribution, gamma and T, and a seed derived from its seed
    (bbrlcore.seeds.validation_seed: never one of its MDPs). Each algorithm's
    configuration is chosen on it; scores are reported on the test set."""
    input:
        f"{R}/test_sets/{{test}}.parquet",
    output:
        f"{R}/test_sets/{{test}}.validation.parquet",
    log:
        f"{R}/logs/test_sets/{{test}}.validation.log",
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        n=config["validation_mdps"],
        version=VERSION,
    shell:
        "bbrl --log {log:q} experiment validation {input:q} --n-mdps {params.n}"
        " -o {output:q}"
