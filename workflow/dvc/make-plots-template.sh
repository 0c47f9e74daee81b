#!/usr/bin/env bash
# Remake workflow/dvc/plots.html, the page of `dvc plots show` and `dvc plots diff`
# (.dvc/config: plots.html_template) with Vega inlined, so that it renders offline: DVC's
# own page loads vega, vega-lite and vega-embed from a CDN. The versions are those of
# dvc-render's page; npm checks each package against its published integrity hash.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
packages=(vega@5.20.2 vega-lite@5.2.0 vega-embed@6.18.2)
(cd "$tmp" && npm pack --silent "${packages[@]}" >/dev/null)
{
    echo '<!DOCTYPE html>'
    echo "<!-- DVC's plots page with ${packages[*]} inlined (BSD-3-Clause, University of"
    echo '     Washington Interactive Data Lab), made by make-plots-template.sh. -->'
    echo '<html>'
    echo '<head>'
    echo '<meta charset="utf-8">'
    echo '<title>mixnmt: DVC plots</title>'
    for package in "${packages[@]}"; do
        name=${package%@*}
        echo '<script>'
        tar -xOzf "$tmp/$name-${package#*@}.tgz" "package/build/$name.min.js" | sed '/^\/\/# sourceMappingURL=/d'
        echo '</script>'
    done
    echo '</head>'
    echo '<body>'
    echo '{plot_divs}'
    echo '</body>'
    echo '</html>'
} > "$tmp/plots.html"
mv "$tmp/plots.html" plots.html
