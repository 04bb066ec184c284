# Stage 7: the summary table and a minimal markdown rendering.
# (The report proper, results/report/index.html, is the export stage's.)


rule summary:
    input:
        merged=expand(
            f"{R}/merged/{{experiment}}.parquet", experiment=sorted(EXPERIMENTS)
        ),
        validation=validation_merged(),
    output:
        parquet=f"{R}/summary.parquet",
        markdown=f"{R}/summary.md",
    log:
        f"{R}/logs/summary.log",
    conda:
        CONDA_ENV
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        score=config["score"],
        validation=validation_args,
        version=VERSION,
    shell:
        "bbrl --log {log:q} summary {input.merged:q} -o {output.parquet:q}"
        " --score {params.score} {params.validation} --markdown {output.markdown:q}"
