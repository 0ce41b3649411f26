#!/usr/bin/env bash
# Installs Debian's Chromium for the headless report test (tests/report-html.test.ts opens
# report.html offline in it through playwright-core). Idempotent; a no-op where
# /usr/bin/chromium exists. Runs `apt-get update` only when the install finds no candidate
# or cannot fetch it (empty or stale package lists), so the common path downloads no index.
# Exits 0 even when it cannot install (no root, no passwordless sudo, no apt, apt failure), as
# tools/install-lavapipe.sh does, so CI still runs every other test: the report test is what
# fails then, naming this script, unless BFE_SKIP_BROWSER=1 marks it skipped.
set -uo pipefail
readonly CHROMIUM=/usr/bin/chromium
if [ -x "$CHROMIUM" ]; then
  echo "chromium: already installed ($("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM"))"
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  as_root=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "chromium: not installed and cannot install here (needs root or passwordless sudo);" \
    "the browser tests (tests/report-html.test.ts, apps/server/src/page.test.ts) fail unless BFE_SKIP_BROWSER=1"
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "chromium: not installed and cannot install here (needs apt-get);" \
    "the browser tests (tests/report-html.test.ts, apps/server/src/page.test.ts) fail unless BFE_SKIP_BROWSER=1"
  exit 0
fi
apt_install() {
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends chromium 2>&1
}
if ! out=$(apt_install); then
  if printf '%s' "$out" | grep -Eq 'Unable to locate package|has no installation candidate|Unable to fetch some archives'; then
    echo "chromium: no candidate in the package lists; running apt-get update"
    "${as_root[@]}" apt-get update -qq >/dev/null && out=$(apt_install)
  fi
fi
if [ -x "$CHROMIUM" ]; then
  echo "chromium: installed ($("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM"))"
else
  printf '%s\n' "$out" | tail -n 5
  echo "chromium: installation failed; the browser tests (tests/report-html.test.ts, apps/server/src/page.test.ts) fail unless BFE_SKIP_BROWSER=1"
fi
