#!/bin/bash
# PipeWire + WirePlumber + pipewire-pulse with a null sink `ci_sink` as the default output, in
# $XDG_RUNTIME_DIR on the D-Bus session of scripts/start-audio.sh. Run again, it first stops
# the server it started there (the pid files), so a test can begin on a fresh one.
set -u
: "${XDG_RUNTIME_DIR:?run scripts/start-audio.sh first}"
for name in pipewire-pulse wireplumber pipewire; do
    pidfile=$XDG_RUNTIME_DIR/$name.pid
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
    rm -f "$pidfile"
done
pipewire > $XDG_RUNTIME_DIR/pipewire.log 2>&1 & echo $! > $XDG_RUNTIME_DIR/pipewire.pid
sleep 0.2
wireplumber > $XDG_RUNTIME_DIR/wireplumber.log 2>&1 & echo $! > $XDG_RUNTIME_DIR/wireplumber.pid
pipewire-pulse > $XDG_RUNTIME_DIR/pipewire-pulse.log 2>&1 & echo $! > $XDG_RUNTIME_DIR/pipewire-pulse.pid
for i in $(seq 50); do pactl info >/dev/null 2>&1 && break; sleep 0.1; done
pactl load-module module-null-sink sink_name=ci_sink sink_properties=device.description=CI_Null_Sink rate=48000 channels=2 >/dev/null
for i in $(seq 30); do pactl set-default-sink ci_sink 2>/dev/null && pactl info | grep -q 'Default Sink: ci_sink' && break; sleep 0.1; done
