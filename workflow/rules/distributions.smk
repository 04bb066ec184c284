# Stage 1: the distributions (priors and test distributions) as Parquet artefacts.


rule distribution:
    output:
        f"{R}/distributions/{{dist}}.parquet",
    log:
        f"{R}/logs/distributions/{{dist}}.log",
    params:
        spec=distribution_spec,
        version=VERSION,
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        CONDA_ENV
    shell:
        "({BBRL} distribution export {params.spec} -o {output}.dat"
        " && {BBRL} distribution import {output}.dat -o {output}"
        " && rm -f {output}.dat) > {log} 2>&1"
