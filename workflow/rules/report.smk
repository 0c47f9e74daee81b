PLOT_INPUTS = {  # what each figure is drawn from
    "learning_curves": expand(f"{OUT}/train/{{model}}/metrics.tsv", model=MODELS),
    "bleu_by_length": expand(f"{OUT}/tables/lengths/{{testset}}.tsv", testset=TESTSETS),
    "alignments": expand(f"{OUT}/analysis/{{model}}.json", model=MODELS),
    "responsibilities": expand(f"{OUT}/analysis/{{model}}.json", model=MODELS),
    "component_usage": expand(f"{OUT}/analysis/{{model}}.json", model=MODELS),
    "cost": [f"{OUT}/tables/cost.tsv"],
}

# One rule per figure (plot_<figure>), so that each carries its own report caption.
for name in FIGURES:

    rule:
        name:
            f"plot_{name}"
        input:
            PLOT_INPUTS[name],
        output:
            png=report(figure(name), caption=f"../report/{name}.rst", category="Figures"),
            svg=f"{OUT}/figures/{name}.svg",
        params:
            # learning curves are read per model: MODEL=metrics.tsv
            inputs=lambda w, input: named(dict(zip(MODELS, input))) if "metrics.tsv" in input[0] else list(input),
            kind=name.replace("_", "-"),
        log:
            logged(f"plot/{name}"),
        conda:
            "../../envs/plots.yaml"
        shell:
            "mixnmt plot {params.kind} --output {output.png:q} {params.inputs:q} 2> {log:q}"


rule report:
    input:
        scores=f"{OUT}/scores.tsv",
        significance=expand(f"{OUT}/significance/{{testset}}.json", testset=TESTSETS),
        lengths=expand(f"{OUT}/tables/lengths/{{testset}}.tsv", testset=TESTSETS),
        cost=f"{OUT}/tables/cost.tsv",
        components=f"{OUT}/tables/components.tsv",
        manifests=expand(f"{OUT}/train/{{model}}/manifest.json", model=MODELS),
        figures=[figure(name) for name in FIGURES],
        captions=[f"{workflow.basedir}/workflow/report/{name}.rst" for name in [*FIGURES, "scores"]],
    output:
        f"{OUT}/report.html",
    params:
        # The mirror only says where the checksum-pinned files came from: no result depends on it.
        config=json.dumps({key: value for key, value in config.items() if key != "mirror"}),
        captions=f"{workflow.basedir}/workflow/report",
    log:
        logged("report"),
    conda:
        "../../envs/plots.yaml"
    shell:
        "mixnmt report --experiment {config[experiment]:q} --config {params.config:q}"
        " --scores {input.scores:q} --significance {input.significance:q} --lengths {input.lengths:q}"
        " --cost {input.cost:q} --components {input.components:q} --manifests {input.manifests:q}"
        " --figures {input.figures:q} --captions {params.captions:q} --output {output:q} 2> {log:q}"
