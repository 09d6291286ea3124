#!/bin/bash
# A virtual X display for the app's tests (clipboard, WebDriver). Usage: source scripts/start-display.sh
# Picks a free display number; exports DISPLAY; the Xvfb pid goes to $XDG_RUNTIME_DIR/xvfb.pid.
for n in $(seq 91 140); do
  if [ ! -e "/tmp/.X11-unix/X$n" ] && [ ! -e "/tmp/.X$n-lock" ]; then HARK_DISP=$n; break; fi
done
Xvfb ":$HARK_DISP" -screen 0 1280x900x24 -nolisten tcp >/dev/null 2>&1 &
echo $! > "${XDG_RUNTIME_DIR:-/tmp}/xvfb.pid"
export DISPLAY=":$HARK_DISP"
for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X$HARK_DISP" ] && break; sleep 0.1; done
echo "display: $DISPLAY"
