# Stage 3: numba warm-up of the algorithms that run in several jobs, then offline training:
# one job per bundle of training units of one algorithm (bbrlcore.plan.bundles; only
# algorithms that learn offline, such as OPPS-DS, have training units: any other agent is
# built from its prior inside the run job that plays it).


rule warmup_numba:
    """Compile (or load) an algorithm's kernels once before its fan-out, so that parallel
    jobs do not all compile and write numba's cache at the same time (one job per
    algorithm that runs in several jobs: they compile in parallel). Its output is an
    ``ancient`` input of that algorithm's jobs: re-warming never reruns results."""
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


for _bundle in TRAIN_BUNDLES:

    rule:
        name:
            _bundle.name
        input:
            bundle_inputs(_bundle),
        output:
            _bundle.outputs(R),
        log:
            f"{R}/logs/train/{_bundle.name}.log",
        conda:
            CONDA_ENV
        resources:
            mem_mb=bundle_mem(_bundle),
            runtime=bundle_runtime(_bundle),
        params:
            spec=bundle_spec(_bundle),
            partial=f"{R}/.partial/{_bundle.name}",
            version=VERSION,
        shell:
            "bbrl --log {log:q} batch --spec {params.spec:q} --partial {params.partial:q}"
