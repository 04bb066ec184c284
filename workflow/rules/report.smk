# Stage 8: the export: figures, tables, the HTML report (results/report/index.html, the
# entry point a user opens) and the LaTeX report beside it. Every number a figure shows
# is also in Parquet under results/report/data/.


rule report:
    input:
        merged=expand(
            f"{R}/merged/{{experiment}}.parquet", experiment=sorted(EXPERIMENTS)
        ),
        test_sets=expand(f"{R}/test_sets/{{testset}}.parquet", testset=PLAN.test_sets),
        validation=validation_merged(),
    output:
        index=report(
            f"{R}/report/index.html",
            caption="../report/index.rst",
            category="Report",
        ),
        tex=f"{R}/report/report.tex",
        figures=report(
            directory(f"{R}/report/figures"),
            patterns=["{name}.png"],
            caption="../report/figure.rst",
            category="Figures",
        ),
        data=directory(f"{R}/report/data"),
        pages=directory(f"{R}/report/experiments"),
        library=f"{R}/report/plotly.min.js",
    log:
        f"{R}/logs/report.log",
    conda:
        CONDA_ENV
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        alpha=config["alpha"],
        correction=config["multiple_comparisons"],
        resamples=config["bootstrap_resamples"],
        seed=config["bootstrap_seed"],
        outdir=report_dir,
        score=config["score"],
        versus=versus_arg,
        validation=validation_args,
        version=VERSION,
        plugins=plugin_args(),
    shell:
        "bbrl --log {log:q} report {input.merged:q} --test-sets {input.test_sets:q}"
        " {params.validation} --alpha {params.alpha} --correction {params.correction}"
        " --bootstrap-resamples {params.resamples} --bootstrap-seed {params.seed}"
        " --score {params.score} {params.versus} {params.plugins} -o {params.outdir:q}"
