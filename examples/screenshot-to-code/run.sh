#!/usr/bin/env bash
# Screenshot to code, the whole loop: screenshot a page, ask kimi to build it from the picture alone,
# render what it built, and score how close it is.
# Usage: examples/screenshot-to-code/run.sh [WORK_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
cd "$work"
[ -d .git ] || git init -q

python3 "$here/render.py" "$here/page/index.html" shot.png            # 1. the screenshot
# 2. kimi sees only the picture, then its own page after every edit, until the SSIM reaches MIN_SSIM
status=0
kimi -p "Build this page as a single self-contained index.html (inline CSS, no external assets) that \
looks as close as possible to the screenshot @shot.png at 1024x640. Write it with WriteFile." \
  --no-pack --max-steps "${MAX_STEPS:-20}" --visual-check index.html --visual-target "${MIN_SSIM:-0.8}" \
  --output-format json > kimi-result.json || status=$?
[ -f index.html ] || { echo "kimi did not write index.html" >&2; exit 1; }
python3 "$here/render.py" index.html built.png                        # 3. render what it built
python3 "$here/compare.py" shot.png built.png --min-ssim "${MIN_SSIM:-0.8}" | tee score.json   # 4. score
echo "screenshot: $work/shot.png  built: $work/built.png  html: $work/index.html"
exit "$status"
