#!/usr/bin/env bash
# Installs Mesa's software Vulkan driver (lavapipe) from Debian bookworm-backports, so that
# onnxruntime-node's WebGPU execution provider finds an adapter on machines without a GPU
# (stock bookworm Mesa 22 is refused by Dawn). Idempotent; a no-op where it is installed.
# Without root or apt it only says so: the WebGPU tests are then skipped, and counted.
set -uo pipefail
have() {
  ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1' &&
    dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null | grep -Eq '^(2[5-9]|[3-9][0-9])\.'
}
if have; then
  echo "lavapipe: Mesa $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers) already installed"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "lavapipe: not installed and cannot install here (needs root and apt); WebGPU tests will be skipped"
  exit 0
fi
. /etc/os-release
if [ "${VERSION_CODENAME:-}" = bookworm ]; then
  echo 'deb http://deb.debian.org/debian bookworm-backports main' >/etc/apt/sources.list.d/bfe-backports.list
  target=(-t bookworm-backports)
else
  target=()
fi
apt-get update -qq >/dev/null &&
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${target[@]}" mesa-vulkan-drivers libvulkan1 >/dev/null &&
  echo "lavapipe: installed Mesa $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers)" ||
  echo "lavapipe: installation failed; WebGPU tests will be skipped"
