#!/usr/bin/env bash
# Installs, idempotently, what the browser tests (test/service/*.py) need: a
# headless Chromium with its driver from Debian, and a virtualenv under
# <repo>/.cache/venv with Selenium in it. Safe to run again: it only installs
# what is missing, and says nothing when everything is there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${root}/.cache/venv"
# Pinned so that every machine drives the browser with the same client. The
# newest releases ask for a certifi younger than some package indexes carry;
# this one resolves with looser bounds, and supports Python 3.9 and later.
selenium_version="4.38.0"

packages=(chromium chromium-driver python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "strata setup-python: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# A venv whose interpreter no longer runs (the system Python moved on) is
# made again rather than patched.
if ! "${venv}/bin/python" -c '' >/dev/null 2>&1; then
  echo "strata setup-python: creating ${venv}"
  rm -rf "${venv}"
  mkdir -p "$(dirname "${venv}")"
  python3 -m venv "${venv}"
fi

installed="$("${venv}/bin/python" -c 'import importlib.metadata as m; print(m.version("selenium"))' 2>/dev/null || true)"
if [ "${installed}" != "${selenium_version}" ]; then
  echo "strata setup-python: installing selenium ${selenium_version}"
  "${venv}/bin/python" -m pip install -q --disable-pip-version-check "selenium==${selenium_version}"
fi
