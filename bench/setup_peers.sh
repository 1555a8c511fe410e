#!/usr/bin/env bash
# Install the packing peers for bench/pack.py into bench/.peers (ignored by git), apart from our own env.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
peers="$here/.peers"
mkdir -p "$peers"
python3 -m venv "$peers/venv"
# One at a time, so that one failure (no wheel, no network for a source build) leaves the others.
for peer in gitingest files-to-prompt code2prompt; do
  "$peers/venv/bin/pip" install -q "$peer" >/dev/null 2>&1 || echo "$peer did not install" >&2
done
"$peers/venv/bin/pip" install -q aider-chat || echo "aider-chat did not install; its repo map is left out" >&2
npm install -q --prefix "$peers/npm" repomix >/dev/null 2>&1 || echo "repomix did not install" >&2
# kimi-cli (Moonshot's own CLI) for bench/step_gap.py: it needs Python >= 3.12.
py313="$(command -v python3.13 || command -v python3.12 || true)"
if [ -n "$py313" ]; then
  "$py313" -m venv "$peers/kimi-cli" && "$peers/kimi-cli/bin/pip" install -q "kimi-cli==1.51.0" >/dev/null 2>&1 \
    || echo "kimi-cli did not install" >&2
else
  echo "no Python >= 3.12: kimi-cli is left out of bench/step_gap.py" >&2
fi
echo "peers installed in $peers"
