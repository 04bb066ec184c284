# Stage 4: one test set per test distribution and setting of the interaction (shared by
# its accurate and inaccurate experiments, so agents are paired across priors; named
# {test}@{label} in a setting other than the global one: bbrlcore.plan.model.Experiment).


rule test_set:
    input:
        test_set_input,
    output:
        f"{R}/test_sets/{{testset}}.parquet",
    log:
        f"{R}/logs/test_sets/{{testset}}.log",
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        n=config["n_mdps"],
        gamma=config["gamma"],
        setting=test_set_setting,
        seed=config["test_seed"],
        version=VERSION,
    shell:
        "bbrl --log {log:q} experiment new --test {input:q} --n-mdps {params.n}"
        " --gamma {params.gamma} {params.setting} --seed {params.seed}"
        " -o {output:q}"


rule validation_set:
    """The validation set of a test set (selection: validation): validation_mdps
    MDPs with the test set's distribution, gamma and T, and a seed derived from its seed
    (bbrlcore.seeds.validation_seed: never one of its MDPs). Each algorithm's
    configuration is chosen on it; scores are reported on the test set."""
    input:
        f"{R}/test_sets/{{testset}}.parquet",
    output:
        f"{R}/test_sets/{{testset}}.validation.parquet",
    log:
        f"{R}/logs/test_sets/{{testset}}.validation.log",
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
