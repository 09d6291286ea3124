#!/bin/bash
# Headless audio for the real-audio tests: D-Bus session + PipeWire + WirePlumber + pipewire-pulse,
# with a null sink `ci_sink` as the default output. Usage: source scripts/start-audio.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/xdg-ci}
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
dbus-daemon --session --fork --address=unix:path=$XDG_RUNTIME_DIR/bus --print-pid > $XDG_RUNTIME_DIR/dbus.pid
export DBUS_SESSION_BUS_ADDRESS=unix:path=$XDG_RUNTIME_DIR/bus
"$(dirname "${BASH_SOURCE[0]}")"/start-sound-server.sh
pactl info | grep -E 'Server Name|Default Sink'
