#!/bin/bash
# Headless audio for the real-audio tests: D-Bus session + PipeWire + WirePlumber + pipewire-pulse,
# with a null sink `ci_sink` as the default output. Usage: source scripts/start-audio.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/xdg-ci}
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
dbus-daemon --session --fork --address=unix:path=$XDG_RUNTIME_DIR/bus --print-pid > $XDG_RUNTIME_DIR/dbus.pid
export DBUS_SESSION_BUS_ADDRESS=unix:path=$XDG_RUNTIME_DIR/bus
pipewire > $XDG_RUNTIME_DIR/pipewire.log 2>&1 & echo $! > $XDG_RUNTIME_DIR/pipewire.pid
sleep 0.2
wireplumber > $XDG_RUNTIME_DIR/wireplumber.log 2>&1 & echo $! > $XDG_RUNTIME_DIR/wireplumber.pid
pipewire-pulse > $XDG_RUNTIME_DIR/pipewire-pulse.log 2>&1 & echo $! > $XDG_RUNTIME_DIR/pipewire-pulse.pid
for i in $(seq 50); do pactl info >/dev/null 2>&1 && break; sleep 0.1; done
pactl load-module module-null-sink sink_name=ci_sink sink_properties=device.description=CI_Null_Sink rate=48000 channels=2 >/dev/null
for i in $(seq 30); do pactl set-default-sink ci_sink 2>/dev/null && pactl info | grep -q 'Default Sink: ci_sink' && break; sleep 0.1; done
pactl info | grep -E 'Server Name|Default Sink'
