#!/usr/bin/env bash
# System and Python packages Hark needs to build, run and test on Debian/Ubuntu.
# Idempotent: safe to run again. Python tools go into a venv at build/venv (PEP 668 safe).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

APT_PACKAGES=(
  build-essential pkg-config ca-certificates unzip
  libsonic-dev                         # speed and pitch (FFI to libsonic, as espeak-ng and NVDA use); also linked by espeak-ng
  cmake                                # espeak-ng 1.52 (espeak-rs-sys builds it and its data) and libopus 1.5 (the opus crate)
  libclang-dev                         # espeak-rs-sys generates its bindings with bindgen
  valgrind                             # scripts/valgrind-codepoints.sh (espeak-ng over every code point)
  libasound2-dev                       # cpal (ALSA)
  python3 python3-venv python3-pip     # oracle and reference scripts
  pipewire pipewire-pulse pipewire-alsa wireplumber pulseaudio-utils dbus sox  # audio tests
  libssl-dev libwebkit2gtk-4.1-dev libgtk-3-dev libayatana-appindicator3-dev librsvg2-dev libxdo-dev  # the Tauri app
  xvfb xauth webkit2gtk-driver xclip   # the app's end-to-end tests (Xvfb, WebDriver, clipboard)
  speech-dispatcher speech-dispatcher-espeak-ng python3-speechd  # sd_hark's tests and `hark bench --speechd`
  mpv                                  # `hark follow --mpv`'s test: a headless player to follow
)
# npm only installs axe-core for the app's accessibility test; skip the Debian package if npm exists.
command -v npm >/dev/null || APT_PACKAGES+=(npm)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null; then
  echo "error: Rust (cargo) is not installed. Install it with rustup (https://rustup.rs), then run this again." >&2
  exit 1
fi

# WebDriver bridge for the app's end-to-end tests (~1.5 min to build, once).
if ! command -v tauri-driver >/dev/null; then
  cargo install tauri-driver --locked
fi

if [ ! -x build/venv/bin/python ]; then
  python3 -m venv build/venv
fi
build/venv/bin/pip install -q --disable-pip-version-check -r scripts/requirements.txt
