#!/usr/bin/env bash
# Summarise a git repository's recent activity: git-digest.sh REPO [DAYS]
set -euo pipefail
repo="${1:?usage: digest.sh REPO [DAYS]}"
days="${2:-7}"
cd "$repo"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "not a git repository: $repo" >&2; exit 2; }
echo "## Branch"
git branch --show-current || true
if [ -z "$(git status --porcelain)" ]; then echo "working tree clean"; else echo "uncommitted changes:"; git status --short | head -20; fi
echo
echo "## Commits in the last $days days"
git log --since="$days days ago" --date=short --pretty='%h %ad %an: %s' | head -50
echo
echo "## Commits per author"
git shortlog -sn --since="$days days ago" HEAD | head -10
echo
echo "## Files changed most often"
git log --since="$days days ago" --name-only --pretty=format: | grep -v '^$' | sort | uniq -c | sort -rn | head -10
