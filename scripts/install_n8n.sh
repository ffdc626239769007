#!/usr/bin/env bash
# Installs the pinned n8n the workflow tests run (tests/ingestion/test_n8n_workflows.py) into
# var/n8n (git-ignored). Idempotent: quick when the pinned version is already there. Never fails
# the caller: without node/npm, or when the registry is unreachable, it says why and exits 0 so
# the tests skip with a reason.
set -uo pipefail
cd "$(dirname "$0")/.."

N8N_VERSION="1.123.50"   # 1.123.66+ pulls isolated-vm, which needs Node 22
DEST="var/n8n"
BIN="$DEST/node_modules/.bin/n8n"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "install_n8n: node/npm not found; the n8n workflow tests will be skipped"
  exit 0
fi
if [ -x "$BIN" ] && grep -q "\"version\": \"$N8N_VERSION\"" "$DEST/node_modules/n8n/package.json" 2>/dev/null; then
  echo "install_n8n: n8n $N8N_VERSION already in $DEST"
  exit 0
fi

mkdir -p "$DEST"
# n8n's own xlsx dependency is a tarball URL on cdn.sheetjs.com, outside the npm registry; the
# override pins the registry's last published xlsx so the install needs nothing but the registry.
cat > "$DEST/package.json" <<JSON
{
  "name": "knowhub-n8n",
  "private": true,
  "dependencies": { "n8n": "$N8N_VERSION" },
  "overrides": { "xlsx": "0.18.5" }
}
JSON
echo "install_n8n: installing n8n $N8N_VERSION into $DEST (several minutes the first time)"
if ! (cd "$DEST" && npm install --no-audit --no-fund --loglevel=error >install.log 2>&1); then
  echo "install_n8n: npm install failed (see $DEST/install.log); the n8n workflow tests will be skipped"
  tail -n 20 "$DEST/install.log" || true
  exit 0
fi
echo "install_n8n: $("$BIN" --version 2>/dev/null || echo 'installed, but n8n --version failed')"
