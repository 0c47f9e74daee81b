# One rule per figure of mixnmt.figures.FIGURES (plot_<figure>), so that each carries its
# own report caption, workflow/report/<figure>.rst.
for name, spec in FIGURES.items():

    rule:
        name:
            f"plot_{name}"
        input:
            **inputs_of(spec.inputs),
        output:
            png=report(
                figure(name), caption=f"../report/{name}.rst", category="Figures"
            ),
            svg=figure(name, "svg"),
        log:
            logged(f"plot/{name}"),
        group:
            "summary"
        conda:
            "../../envs/plots.yaml"
        params:
            args=input_args(spec.inputs),
            name=name,
            runs=RUNS,
            models=MODELS,
        shell:
            "mixnmt plot {params.name:q} {params.args:q} --runs {params.runs:q}"
            " --models {params.models:q} --output {output.png:q} 2> {log:q}"


rule report:
    input:
        scores=INPUT_FILES["scores"],
        significance=INPUT_FILES["significance"],
        lengths=INPUT_FILES["lengths"],
        manifests=INPUT_FILES["manifests"],
        figures=[figure(name) for name in FIGURES],
        tables=[table(name) for name in TABLES],
        captions=[
            workflow.source_path(f"../report/{name}.rst")
            for name in [*FIGURES, "scores"]
        ],
    output:
        report(
            LAYOUT.report,
            caption="../report/report.rst",
            category="Study report",
        ),
    log:
        logged("report"),
    group:
        "summary"
    conda:
        "../../envs/plots.yaml"
    params:
        experiment=config["experiment"],
        config=canonical(reported(config)),
        captions=lambda w, input: os.path.dirname(input.captions[0]),
        runs=RUNS,
    shell:
        "mixnmt report --experiment {params.experiment:q} --config {params.config:q} --runs {params.runs:q}"
        " --scores {input.scores:q} --significance {input.significance:q} --lengths {input.lengths:q}"
        " --manifests {input.manifests:q} --figures {input.figures:q} --tables {input.tables:q}"
        " --captions {params.captions:q} --output {output:q} 2> {log:q}"
