#!/usr/bin/env bash
# The OpenID provider the identity tests start on loopback: the npm package oidc-provider (an
# OpenID-certified implementation), installed under var/oidc-provider (git-ignored). Idempotent;
# quick when already installed. Without node/npm or the registry it says why and exits 0: the
# tests that need the provider then skip with that reason.
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=var/oidc-provider
VERSION="9.13.3"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null) \
      || { echo "install_oidc_provider: could not install node/npm; OpenID provider tests will be skipped"; exit 0; }
  else
    echo "install_oidc_provider: node/npm missing; OpenID provider tests will be skipped"; exit 0
  fi
fi
if [ -f "$DEST/node_modules/oidc-provider/package.json" ] \
  && grep -q "\"version\": \"$VERSION\"" "$DEST/node_modules/oidc-provider/package.json"; then
  exit 0
fi
mkdir -p "$DEST"
[ -f "$DEST/package.json" ] || echo '{"name": "knowhub-test-oidc-provider", "private": true}' > "$DEST/package.json"
if ! npm install --prefix "$DEST" --no-audit --no-fund --silent "oidc-provider@$VERSION" >/dev/null 2>&1; then
  echo "install_oidc_provider: npm install oidc-provider@$VERSION failed; OpenID provider tests will be skipped"
fi
exit 0
