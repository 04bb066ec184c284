# Stage 1: the distributions (priors and test distributions) as Parquet artefacts, each
# under its name in the configuration (which names the experiments: {test}-{prior}).


rule distribution:
    output:
        f"{R}/distributions/{{dist}}.parquet",
    log:
        f"{R}/logs/distributions/{{dist}}.log",
    conda:
        CONDA_ENV
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        spec=distribution_spec,
        version=VERSION,
    shell:
        "bbrl --log {log:q} distribution import {params.spec:q}"
        " --short-name {wildcards.dist} -o {output:q}"
