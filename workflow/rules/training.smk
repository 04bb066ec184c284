# Stage 3: numba warm-up, then offline training of every agent configuration per prior.


rule warmup_numba:
    """Compile (or load) an algorithm's kernels once before its fan-out, so that parallel
    jobs do not all compile and write numba's cache at the same time (one job per
    algorithm: they compile in parallel). Its output is an ``ancient`` input of that
    algorithm's training and runs: re-warming never reruns results."""
    input:
        unpack(warmup_inputs),
    output:
        f"{R}/warmup/{{algorithm}}.txt",
    log:
        f"{R}/logs/warmup_numba/{{algorithm}}.log",
    priority: 100
    conda:
        CONDA_ENV
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        algorithm="{algorithm}",
        agent=warmup_agent,
        # not bbrlcore's version: the numba cache directory (keyed by the version and the
        # source tree) decides when kernels must be compiled again
        numba_cache=os.environ.get("NUMBA_CACHE_DIR", ""),
    script:
        "../scripts/warmup.py"


rule train:
    input:
        unpack(train_inputs),
    output:
        f"{R}/agents/{{prior}}/{{agent}}.parquet",
    log:
        f"{R}/logs/train/{{prior}}/{{agent}}.log",
    conda:
        CONDA_ENV
    resources:
        mem_mb=train_mem,
        runtime=train_runtime,
    params:
        algorithm=algorithm_of,
        agent_params=agent_params,
        cli=agent_cli,
        checkpoint=checkpoint_args,
        seed=config["train_seed"],
        gamma=config["gamma"],
        horizon=config["horizon"],
        version=VERSION,
    shell:
        "bbrl --log {log:q} train --agent {params.algorithm:q} {params.cli}"
        " --prior {input.prior:q}"
        " --seed {params.seed} --gamma {params.gamma} --horizon {params.horizon}"
        " {params.checkpoint} -o {output:q}"
