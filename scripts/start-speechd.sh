#!/bin/bash
# speech-dispatcher for the speechd tests, next to the PipeWire null sink of start-audio.sh,
# with its own configuration, cache and log folders under $XDG_RUNTIME_DIR (never the
# user's). The tests install Hark into that configuration (`hark speechd install`) and then
# restart it, since speech-dispatcher reads its module list when it starts.
# Usage: source scripts/start-speechd.sh     (after scripts/start-audio.sh)
#        scripts/start-speechd.sh restart    (stop it and start it again, same folders)
: "${XDG_RUNTIME_DIR:?source scripts/start-audio.sh first}"
export HARK_SPEECHD_HOME=$XDG_RUNTIME_DIR/speechd
export HARK_SPEECHD_CONFIG_HOME=$HARK_SPEECHD_HOME/config
mkdir -p "$HARK_SPEECHD_CONFIG_HOME" "$HARK_SPEECHD_HOME/log" "$HARK_SPEECHD_HOME/cache"

hark_speechd_start() {
  local pidfile=$XDG_RUNTIME_DIR/speech-dispatcher/pid/speech-dispatcher.pid
  local pid
  pid=$(cat "$pidfile" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$pidfile"
  # The module logs at trace level (HARK_SPEECHD_LOG=5, kept over speech-dispatcher's own
  # LOGLEVEL) into log/hark.log: the tests read its timing lines and check it has no text.
  HARK_SPEECHD_LOG=5 XDG_CONFIG_HOME=$HARK_SPEECHD_CONFIG_HOME XDG_CACHE_HOME=$HARK_SPEECHD_HOME/cache \
    speech-dispatcher -d -t 0 -l 3 -L "$HARK_SPEECHD_HOME/log" >/dev/null 2>&1
  for _ in $(seq 100); do
    [ -S "$XDG_RUNTIME_DIR/speech-dispatcher/speechd.sock" ] && [ -s "$pidfile" ] && break
    sleep 0.1
  done
  # .ci/run's exit trap kills every $XDG_RUNTIME_DIR/*.pid.
  cp "$pidfile" "$XDG_RUNTIME_DIR/speechd.pid"
  echo "speech-dispatcher $(speech-dispatcher -v | head -1 | awk '{print $NF}') (pid $(cat "$pidfile"))"
}

hark_speechd_start
