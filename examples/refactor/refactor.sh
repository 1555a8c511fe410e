#!/usr/bin/env bash
# A repo-wide rename in headless mode, verified by the project's tests, as one commit on its own branch.
# Usage: examples/refactor/refactor.sh OLD_NAME NEW_NAME ["TEST COMMAND"] [--split]
#        KEEP_OLD_NAME_IN="CHANGELOG.md docs/history" refactor.sh ...   (paths that may keep the old name)
# --split: the rename is split by top-level folder across coder subagents that work at the same time.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 OLD_NAME NEW_NAME [\"TEST COMMAND\"] [--split]" >&2
  exit 2
fi
old="$1"
new="$2"
test_cmd="${3:-pytest -q}"
split="${4:-}"
branch="kimi/rename-${old}-to-${new}"
result="$(mktemp)"

task="Rename \`$old\` to \`$new\` everywhere in this repository: its definition, every use, imports,
tests, docstrings and docs. Do not change behaviour and do not rename anything else."
if [ "$split" = "--split" ]; then
  # The folders that use the name, each one a subagent's share of the work.
  folders="$(grep -rlw --exclude-dir=.git -- "$old" . | sed -E 's|^\./||; s|/.*||' | sort -u | tr '\n' ' ')"
  task="$task Split the work by top-level folder: in one answer, call the Agent tool once per folder
($folders) with kind coder and the task of renaming \`$old\` to \`$new\` in that folder only; the
subagents run at the same time."
fi
kimi -p "$task When the edits are done, run \`$test_cmd\` with the Shell tool and fix anything the rename
broke. Finish with the list of files you changed." --branch "$branch" --max-steps 150 --output-format json \
  > "$result"

echo "kimi: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["reason"], "-", r["steps"], "steps")' "$result")"
# The verification step: our own run of the tests, not the agent's word for it.
bash -c "$test_cmd"
git add -u    # edits and deletions; new files only if they are not build or cache output:
git ls-files -z --others --exclude-standard | grep -zvE '(__pycache__/|\.pyc$|\.pytest_cache/)' \
  | xargs -0 -r git add -- || true
# The old name must be gone from what would be committed: git grep reads the index, so ignored files (a venv,
# node_modules, build output) never count. KEEP_OLD_NAME_IN="CHANGELOG.md docs/history" names paths that may
# keep it (a changelog records the old name on purpose).
excludes=()
for path in ${KEEP_OLD_NAME_IN:-}; do excludes+=(":(exclude)$path"); done
if git grep --cached -nIw -- "$old" -- . "${excludes[@]}"; then
  echo "the old name is still used (above); not committing (KEEP_OLD_NAME_IN lists paths that may keep it)" >&2
  git reset -q
  exit 1
fi
git commit -q -m "Rename $old to $new" -m "Made by kimi (examples/refactor/refactor.sh); tests: $test_cmd"
echo "committed on $branch: review with  git show --stat HEAD  and  git diff HEAD~1"
