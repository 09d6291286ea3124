"""A small W3C WebDriver client (standard library only) for driving the Hark app through
tauri-driver and WebKitWebDriver."""
import base64
import http.client
import json
import time
import urllib.error
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
KEYS = {"tab": "\ue004", "enter": "\ue007", "right": "\ue014", "left": "\ue012", "shift": "\ue008"}


class WebDriverError(Exception):
    pass


class Session:
    def __init__(self, base, app, args=(), timeout=60):
        self.base = base.rstrip("/")
        caps = {"tauri:options": {"application": app, "args": list(args)}}
        t0 = time.time()
        r = self._req("POST", "/session", {"capabilities": {"alwaysMatch": caps}}, timeout=timeout)
        self.id = r["sessionId"]
        self.start_s = time.time() - t0

    def _req(self, method, path, body=None, timeout=60, retries=3):
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(retries + 1):
            req = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=timeout) as resp:
                    out = json.loads(resp.read() or b"{}")
                return out.get("value")
            except urllib.error.HTTPError as e:
                detail = e.read().decode(errors="replace")
                raise WebDriverError(f"{method} {path}: HTTP {e.code}: {detail[:500]}") from None
            except (http.client.RemoteDisconnected, ConnectionResetError):
                # tauri-driver reuses kept-alive connections that WebKitWebDriver has already
                # closed; the request did not get through, so sending it again is safe.
                if attempt == retries:
                    raise
                time.sleep(0.1)

    def _s(self, method, path, body=None, timeout=60):
        return self._req(method, f"/session/{self.id}{path}", body, timeout)

    def close(self):
        try:
            self._req("DELETE", f"/session/{self.id}")
        except (WebDriverError, OSError):
            pass

    # -- elements ------------------------------------------------------------------------------
    def find(self, css):
        return self._s("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def find_all(self, css):
        return [e[ELEMENT] for e in self._s("POST", "/elements", {"using": "css selector", "value": css})]

    def click(self, css):
        self._s("POST", f"/element/{self.find(css)}/click", {})

    def text(self, css):
        return self._s("GET", f"/element/{self.find(css)}/text")

    def prop(self, css, name):
        return self._s("GET", f"/element/{self.find(css)}/property/{name}")

    def type(self, css, text, clear=True):
        el = self.find(css)
        if clear:
            self._s("POST", f"/element/{el}/clear", {})
        self._s("POST", f"/element/{el}/value", {"text": text})

    def replace(self, css, text):
        """Types over a field's content the way a person does: select all, then type."""
        self._s("POST", f"/element/{self.find(css)}/value", {"text": "\ue009a\ue009" + text})

    def keys(self, css, keys):
        self._s("POST", f"/element/{self.find(css)}/value", {"text": keys})

    def js(self, script, *args):
        return self._s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def js_async(self, script, *args, timeout=60):
        return self._s("POST", "/execute/async", {"script": script, "args": list(args)}, timeout=timeout)

    def active_id(self):
        return self.js("return document.activeElement && document.activeElement.id")

    def press(self, key):
        """Sends one key to whatever has focus (Tab, Enter…) through the actions API."""
        k = KEYS.get(key, key)
        self._s("POST", "/actions", {"actions": [{"type": "key", "id": "kb", "actions": [
            {"type": "keyDown", "value": k}, {"type": "keyUp", "value": k}]}]})

    def screenshot(self, path):
        png = base64.b64decode(self._s("GET", "/screenshot"))
        with open(path, "wb") as f:
            f.write(png)

    def wait(self, what, cond, timeout=10.0, every=0.05):
        """Polls `cond()` until it is truthy; raises with `what` on timeout."""
        end = time.time() + timeout
        last = None
        while time.time() < end:
            try:
                last = cond()
                if last:
                    return last
            except WebDriverError as e:
                last = e
            time.sleep(every)
        raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def focus_x11_pointer_root(x=100, y=100):
    """Without a window manager (Xvfb) no window is ever active, so `:focus` styles never apply.
    Moving the pointer over the app and setting PointerRoot input focus makes it active."""
    import ctypes
    x11 = ctypes.cdll.LoadLibrary("libX11.so.6")
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
    x11.XDefaultRootWindow.restype = ctypes.c_ulong
    x11.XWarpPointer.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong] + [ctypes.c_int] * 2 + \
        [ctypes.c_uint] * 2 + [ctypes.c_int] * 2
    x11.XSetInputFocus.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_ulong]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    dpy = x11.XOpenDisplay(None)
    if not dpy:
        return False
    root = x11.XDefaultRootWindow(dpy)
    x11.XWarpPointer(dpy, 0, root, 0, 0, 0, 0, x, y)
    x11.XSetInputFocus(dpy, 1, 1, 0)  # PointerRoot, RevertToPointerRoot, CurrentTime
    x11.XCloseDisplay(dpy)
    return True
