# Stage 5: runs. A unit is one agent on one chunk of test MDPs of one experiment (its own
# artefact, results/runs/{experiment}/{agent}/{start}-{stop}.parquet); a job is a bundle of
# units of one algorithm, packed up to bundle_minutes by the cost model
# (bbrlcore.plan.bundles), which also splits an expensive agent's test MDPs into chunks
# of at most chunk_budget_minutes. One `bbrl batch` process plays a whole bundle.


for _bundle in RUN_BUNDLES:

    rule:
        name:
            _bundle.name
        input:
            bundle_inputs(_bundle),
        output:
            _bundle.outputs(R),
        log:
            f"{R}/logs/runs/{_bundle.name}.log",
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
