# Stage 5: runs, one job per experiment x agent x chunk of test MDPs. The number of chunks
# comes from the cost model (bbrlcore.plan.cost) so that no chunk is expected to exceed
# chunk_budget_minutes; it is known when the DAG is built.


rule run:
    input:
        unpack(run_inputs),
    output:
        f"{R}/runs/{{experiment}}/{{agent}}/{{start}}-{{stop}}.parquet",
    log:
        f"{R}/logs/runs/{{experiment}}/{{agent}}/{{start}}-{{stop}}.log",
    conda:
        CONDA_ENV
    resources:
        mem_mb=run_mem,
        runtime=run_runtime,
    params:
        algorithm=algorithm_of,
        agent_params=agent_params,
        version=VERSION,
    shell:
        "bbrl --log {log:q} run --experiment {input.test_set:q} --agent {input.agent:q}"
        " --mdps {wildcards.start}:{wildcards.stop} -q -o {output:q}"
