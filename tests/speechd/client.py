#!/usr/bin/python3
"""A speech-dispatcher client (Debian's python3-speechd), as Orca is one, driving the `hark`
module while the CI null sink's monitor is recorded. Prints one JSON object per scenario;
tests/speechd/dispatcher.rs asserts on it.

Times are time.monotonic() seconds. The recording is stamped by its sample count against
the arrival of parec's 10 ms pieces (Recorder.frames), so sound times are where the sink
has it, a constant monitor latency later than the device callback. Both
the callbacks and the sound are on the same clock.

Usage: client.py SCENARIO [--module hark]   (marks, stop, pause, rate, keys, storm)
"""
import array
import json
import subprocess
import sys
import threading
import time

import speechd

RATE = 48_000
PIECE = RATE // 100  # 10 ms
LOUD = 0.02


class Recorder:
    def __init__(self):
        self.proc = subprocess.Popen(
            ["parec", "--device=ci_sink.monitor", "--rate=48000", "--channels=1",
             "--format=s16le", "--latency-msec=10", "--raw"],
            stdout=subprocess.PIPE)
        self.pieces = []  # (arrival time, samples)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        time.sleep(0.4)

    def _read(self):
        # Stamp and keep the bytes only: decoding here would take the GIL from the client's
        # event thread on a busy machine.
        while True:
            b = self.proc.stdout.read(PIECE * 2)
            if not b:
                return
            self.pieces.append((time.monotonic(), b))

    def stop(self):
        time.sleep(0.3)
        self.proc.terminate()
        self.proc.wait()
        self.thread.join(timeout=2)

    def frames(self, ms=10):
        """(time, peak) of each `ms` frame of the recording. A piece arrives when its last
        sample is in or later (a busy machine), never sooner, and the sink hands samples out
        at a steady rate while it runs: so sample k was at the latest
        min over later pieces j of (arrival_j - (total_j - k) / RATE). Only later pieces: the
        sink may pause while idle, which would make earlier ones place k too soon."""
        bounds, total = [], 0
        for t, b in self.pieces:
            total += len(b) // 2
            bounds.append(t - total / RATE)
        for i in range(len(bounds) - 2, -1, -1):
            bounds[i] = min(bounds[i], bounds[i + 1])
        out = []
        step = RATE * ms // 1000
        k = 0
        for (_, b), offset in zip(self.pieces, bounds):
            s = array.array("h", b[:len(b) // 2 * 2])
            if sys.byteorder != "little":
                s.byteswap()
            for j in range(0, len(s), step):
                seg = s[j:j + step]
                peak = max(max(seg, default=0), -min(seg, default=0)) / 32768.0
                out.append((offset + (k + j) / RATE, peak))
            k += len(s)
        return out

    def first_sound_after(self, t0):
        for t, p in self.frames(1):
            if t >= t0 and p > LOUD:
                return t
        return None

    def bursts(self, t0, gap=0.12):
        """Stretches of sound after t0, split at silences longer than `gap` s."""
        out = []
        for t, p in self.frames(10):
            if t < t0 or p <= LOUD:
                continue
            if out and t - out[-1][1] <= gap:
                out[-1][1] = t + 0.01
            else:
                out.append([t, t + 0.01])
        return out


class Client:
    def __init__(self, module):
        self.c = speechd.SSIPClient("hark-tests")
        self.c.set_output_module(module)
        self.events = []
        self.done = threading.Event()

    def cb(self, kind, index_mark=None):
        self.events.append((time.monotonic(), str(kind).split(".")[-1].lower(), index_mark))
        if kind in (speechd.CallbackType.END, speechd.CallbackType.CANCEL,
                    speechd.CallbackType.PAUSE):
            self.done.set()

    def speak(self, text, ssml=False):
        self.done.clear()
        self.c.set_data_mode(speechd.DataMode.SSML if ssml else speechd.DataMode.TEXT)
        t = time.monotonic()
        self.c.speak(text, callback=self.cb, event_types=(
            speechd.CallbackType.BEGIN, speechd.CallbackType.END,
            speechd.CallbackType.CANCEL, speechd.CallbackType.PAUSE,
            speechd.CallbackType.RESUME, speechd.CallbackType.INDEX_MARK))
        return t

    def wait(self, timeout=30):
        return self.done.wait(timeout)

    def first(self, kind, after=0.0):
        return next((t for t, k, _ in self.events if k == kind and t >= after), None)

    def close(self):
        self.c.close()


def marks(module):
    cl = Client(module)
    rec = Recorder()
    text = ('<speak>The first sentence is here.<mark name="one"/> '
            'A second sentence follows it.<mark name="two"/> '
            'And this is the third.</speak>')
    t0 = cl.speak(text, ssml=True)
    ok = cl.wait()
    rec.stop()
    cl.close()
    return {"ok": ok, "t0": t0, "events": cl.events, "bursts": rec.bursts(t0)}


def stop(module):
    cl = Client(module)
    rec = Recorder()
    t0 = cl.speak("This is a long sentence that goes on for a while, so that stopping it "
                  "in the middle can be heard clearly at the sink, and then it goes on more.")
    deadline = time.monotonic() + 20
    while cl.first("begin") is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(1.0)
    t_stop = time.monotonic()
    cl.c.stop()
    cl.wait(5)
    time.sleep(0.5)
    # Speak again at once: as fast as the first time?
    t1 = cl.speak("Hello again.")
    cl.wait()
    rec.stop()
    cl.close()
    return {"t0": t0, "t_stop": t_stop, "t1": t1, "events": cl.events,
            "first_sound": rec.first_sound_after(t0),
            "last_before_restart": max(
                (t for t, p in rec.frames(1) if t_stop <= t < t1 and p > LOUD), default=None),
            "second_sound": rec.first_sound_after(t1)}


def pause(module):
    cl = Client(module)
    rec = Recorder()
    text = ('<speak>Pause after this first sentence.<mark name="p1"/> '
            'Then the second sentence is spoken after the resume.<mark name="p2"/> '
            'And the third.</speak>')
    t0 = cl.speak(text, ssml=True)
    deadline = time.monotonic() + 20
    while cl.first("begin") is None and time.monotonic() < deadline:
        time.sleep(0.005)
    t_pause = time.monotonic()
    cl.c.pause()
    paused = cl.wait(10)
    time.sleep(0.8)
    cl.done.clear()
    t_resume = time.monotonic()
    cl.c.resume()
    cl.wait(20)
    rec.stop()
    cl.close()
    return {"t0": t0, "t_pause": t_pause, "t_resume": t_resume, "paused": paused,
            "events": cl.events, "bursts": rec.bursts(t0)}


def rate(module):
    cl = Client(module)
    out = []
    for r in (-100, -50, 0, 50, 100):
        cl.c.set_rate(r)
        rec = Recorder()
        t0 = cl.speak("Testing the speech rate of this voice.")
        cl.wait()
        rec.stop()
        b = rec.bursts(t0, gap=0.3)
        dur = (b[-1][1] - b[0][0]) if b else None
        # Time with sound: unlike the span, a gap where synthesis fell behind (a loaded
        # machine at 3x speed) does not count.
        voiced = sum(0.01 for t, p in rec.frames(10) if t >= t0 and p > LOUD)
        out.append({"rate": r, "duration": dur, "voiced": voiced})
    cl.c.set_rate(0)
    cl.close()
    return {"rates": out}


def keys(module):
    cl = Client(module)
    rec = Recorder()
    res = []
    for kind, what in [("char", "a"), ("char", "Z"), ("char", "?"), ("char", "7"),
                       ("key", "space"), ("key", "shift_a"), ("key", "enter")]:
        cl.done.clear()
        cl.events.clear()
        t = time.monotonic()
        getattr(cl.c, kind)(what)
        time.sleep(0.9)
        res.append({"kind": kind, "what": what, "t": t,
                    "sound": rec.first_sound_after(t)})
    rec.stop()
    cl.close()
    return {"keys": res}


def storm(module, seconds=30.0, per_second=10):
    """Typing echo: CANCEL + CHAR per key, as Orca sends them. python3-speechd follows only
    SPEAK's events, so every event of the connection is recorded here by message id (an
    event may come before the reply that names its message)."""
    cl = Client(module)
    events = []
    follow = cl.c._callback_handler

    def record(msg_id, client_id, type, **kwargs):
        events.append((time.monotonic(), int(msg_id), type))
        follow(msg_id, client_id, type, **kwargs)

    cl.c._conn.set_callback(record)
    rec = Recorder()
    letters = "abcdefghijklmnopqrstuvwxyz"
    sent = []
    n = int(seconds * per_second)
    start = time.monotonic()
    for i in range(n):
        at = start + i / per_second
        now = time.monotonic()
        if at > now:
            time.sleep(at - now)
        t = time.monotonic()
        cl.c.cancel()  # what Orca sends before each echoed key
        _, _, data = cl.c._conn.send_command('CHAR', letters[i % 26])
        sent.append((t, int(data[0])))
    last_key = time.monotonic()
    time.sleep(1.0)
    # Every event read before the connection closes (the last key's end comes last).
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any(
            m == sent[-1][1] and k in (speechd.CallbackType.END, speechd.CallbackType.CANCEL)
            for _, m, k in events):
        time.sleep(0.05)
    rec.stop()
    cl.close()
    begins = {}
    for t, msg_id, kind in events:
        if kind == speechd.CallbackType.BEGIN:
            begins.setdefault(msg_id, t)
    heard = rec.frames(1)
    last_sound = max((t for t, p in heard if p > LOUD), default=None)
    return {"n": n, "begins": [begins[m] - t if m in begins else None for t, m in sent],
            "tail": None if last_sound is None else last_sound - last_key}


SCENARIOS = {"marks": marks, "stop": stop, "pause": pause, "rate": rate, "keys": keys,
             "storm": storm}

if __name__ == "__main__":
    name = sys.argv[1]
    module = "hark"
    if "--module" in sys.argv:
        module = sys.argv[sys.argv.index("--module") + 1]
    print(json.dumps(SCENARIOS[name](module)))
