#!/usr/bin/env bash
# End-to-end tests of the desktop app: builds it (debug, sharing target/), drives it through
# tauri-driver + WebKitWebDriver under Xvfb, with the real clipboard and, when a null sink is
# running (scripts/start-audio.sh + HARK_AUDIO_TESTS=1), real audio.
#   scripts/e2e.sh [TEST_NAME_PART...]
# Skips with a `skipped:` line when no display/webdriver can be had, unless HARK_E2E_REQUIRED=1
# (CI), where that is an error. HARK_E2E_DOCS=docs also saves the screenshots there.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
  if [ "${HARK_E2E_REQUIRED:-0}" = 1 ]; then echo "error: app e2e tests cannot run: $1" >&2; exit 1; fi
  echo "skipped: app e2e tests ($1)"
  exit 0
}
command -v tauri-driver >/dev/null || skip "tauri-driver is not installed; run scripts/install-deps.sh"
command -v WebKitWebDriver >/dev/null || skip "WebKitWebDriver is not installed (Debian package webkit2gtk-driver)"
command -v xclip >/dev/null || skip "xclip is not installed"

# HARK_E2E_PROFILE=release tests (or benchmarks) the build that scripts/run.sh starts.
PROFILE=${HARK_E2E_PROFILE:-debug}
echo "== app e2e: build ($PROFILE)"
if [ "$PROFILE" = release ]; then
  cargo build --locked --release -p hark -p hark-app
else
  cargo build --locked -p hark -p hark-app
fi
APP="$PWD/target/$PROFILE/hark-app"

cleanup=()
trap 'for p in "${cleanup[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
if [ -z "${DISPLAY:-}" ]; then
  command -v Xvfb >/dev/null || skip "no DISPLAY and no Xvfb"
  # A display number nobody uses, so parallel sessions do not collide.
  for n in $(seq 91 140); do
    if [ ! -e "/tmp/.X11-unix/X$n" ] && [ ! -e "/tmp/.X$n-lock" ]; then DISP=$n; break; fi
  done
  Xvfb ":$DISP" -screen 0 1280x900x24 -nolisten tcp >/dev/null 2>&1 &
  cleanup+=($!)
  export DISPLAY=":$DISP"
  for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X$DISP" ] && break; sleep 0.1; done
  [ -e "/tmp/.X11-unix/X$DISP" ] || skip "Xvfb did not start"
fi

# The default voice, imported once into build/e2e/voices.
ONNX=$(scripts/fetch-voice.sh)
VOICES="$PWD/build/e2e/voices"
if [ ! -f "$VOICES/en_US-joe-medium/voice.json" ]; then
  HARK_VOICES_DIR="$VOICES" target/$PROFILE/hark voice import "$ONNX" >/dev/null
fi

# axe-core for the accessibility check: installed from npm at test time, never fetched by the app.
AXE="$PWD/build/npm/node_modules/axe-core/axe.min.js"
if [ ! -f "$AXE" ] && command -v npm >/dev/null; then
  npm install --silent --prefix build/npm --no-save --no-audit --no-fund axe-core@4.14.1 >/dev/null 2>&1 ||
    echo "warning: npm could not install axe-core" >&2
fi
if [ ! -f "$AXE" ] && [ "${HARK_E2E_REQUIRED:-0}" = 1 ]; then
  echo "error: axe-core is missing (npm install axe-core)" >&2; exit 1
fi

RUN=$(mktemp -d /tmp/hark-e2e.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export HARK_APP="$APP" HARK_E2E_CONFIG="$RUN/config" HARK_VOICES_DIR="$VOICES" \
  HARK_DEFAULT_VOICE_ONNX="$ONNX" AXE_JS="$AXE" HARK_E2E_PORT="$PORT"
if [ -n "${HARK_E2E_DOCS:-}" ]; then export HARK_E2E_DOCS="$PWD/$HARK_E2E_DOCS"; fi
# The app's own files (autostart entry, webview caches) stay inside the run folder.
export HOME="$RUN/home" XDG_CONFIG_HOME="$RUN/home/.config" XDG_DATA_HOME="$RUN/home/.local/share" \
  XDG_CACHE_HOME="$RUN/home/.cache"
mkdir -p "$HOME"
echo "== app e2e: tests (display $DISPLAY, run folder $RUN)"
python3 tests/e2e/test_app.py "$@"
