#!/usr/bin/env bash
# Builds the Swift API documentation (DocC) into OUTPUT (default: docs-html):
# the Amber module with its articles, and the modules it re-exports (values,
# transformers, models, the store), linked to one another.
#   bash scripts/docs.sh [OUTPUT]
# Then serve OUTPUT (python3 -m http.server -d OUTPUT) and open
# /documentation/amber/. Links that do not resolve are printed as warnings.
set -euo pipefail
cd "$(dirname "$0")/.."
output=${1:-docs-html}
mkdir -p "$output"
swift package --allow-writing-to-directory "$output" generate-documentation \
    --enable-experimental-combined-documentation \
    --target Amber --target AmberValues --target AmberTransformers --target AmberModel --target AmberStore --target AmberSQLiteStore \
    --output-path "$output"
