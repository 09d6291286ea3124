// @ts-check
// Hark's UI: renders the state Rust sends and turns controls into commands. No framework: the
// page is one form, a status panel and a list.
import { api, on } from "./api.js";

/** @typedef {import("./api.js").AppState} AppState */
/** @typedef {import("./api.js").Settings} Settings */
/** @typedef {import("./api.js").Status} Status */

const $ = (/** @type {string} */ id) => /** @type {any} */ (document.getElementById(id));

const SHORTCUT_LABELS = {
  speak_selection: "Speak selection",
  speak_clipboard: "Speak clipboard",
  stop: "Stop",
  pause_resume: "Pause or resume",
  toggle_auto_read: "Auto-read on or off",
  previous_sentence: "Previous sentence",
  repeat_sentence: "Repeat sentence",
  next_sentence: "Next sentence",
  back_5s: "Back 5 seconds",
  forward_5s: "Forward 5 seconds",
  read_from_cursor: "Read from the cursor",
};
const STATE_TEXT = {
  starting: "Starting the speech engine…",
  ready: "Ready.",
  speaking: "Speaking.",
  paused: "Paused.",
  no_voice: "No voice installed.",
  no_audio: "No audio output.",
  error: "Speech engine error.",
};
const SOURCE_TEXT = {
  clipboard: "Clipboard",
  selection: "Selection",
  typed: "Typed",
  caption: "Caption",
  history: "History",
};

/** @type {AppState | null} */
let state = null;

// ---- announcements -------------------------------------------------------------------------

/** Says `text` through the polite live region (errors through the alert region). */
function announce(/** @type {string} */ text, level = "info") {
  const region = level === "error" ? $("alert") : $("announcer");
  region.textContent = "";
  // A fresh node on the next frame makes screen readers repeat identical messages too.
  requestAnimationFrame(() => {
    region.textContent = text;
  });
}

/** Shows a message in the visible list and announces it. */
function notify(/** @type {import("./api.js").Notice} */ n) {
  const li = document.createElement("li");
  li.className = `notice ${n.level}`;
  const p = document.createElement("span");
  p.textContent = n.text;
  const close = document.createElement("button");
  close.type = "button";
  close.className = "dismiss";
  close.textContent = "Dismiss";
  close.setAttribute("aria-label", `Dismiss: ${n.text}`);
  close.addEventListener("click", () => {
    li.remove();
    $("main").focus?.();
  });
  li.append(p, close);
  $("notices").prepend(li);
  // Routine confirmations (paused, auto-read on) are announced, then fade from the list.
  if (n.level === "info") setTimeout(() => li.remove(), 8000);
  while ($("notices").children.length > 5) $("notices").lastChild.remove();
  announce(n.text, n.level);
}

// ---- views ---------------------------------------------------------------------------------

function showView(/** @type {string} */ id) {
  for (const tab of document.querySelectorAll(".tab")) {
    const on = tab.getAttribute("data-view") === id;
    if (on) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
    $(tab.getAttribute("data-view")).hidden = !on;
  }
}

// ---- rendering -----------------------------------------------------------------------------

function renderStatus(/** @type {Status} */ s) {
  if (state) state.status = s;
  const line = STATE_TEXT[s.state] + (s.message ? ` ${s.message}` : "");
  if ($("status-line").textContent !== line) $("status-line").textContent = line;
  document.body.dataset.state = s.state;
  $("stat-onset").textContent = s.onset_ms == null ? "–" : `${Math.round(s.onset_ms)} ms`;
  $("stat-backend").textContent = s.backend ?? "–";
  $("stat-queue").textContent = String(s.queue_depth);
  $("stat-rtf").textContent = s.rtf == null ? "–" : s.rtf.toFixed(2);
  $("stat-voice").textContent = s.voice ?? "–";
  $("onboarding").hidden = s.state !== "no_voice";
  $("engine-retry-row").hidden = !["no_audio", "error"].includes(s.state);
  const paused = s.state === "paused";
  $("pause").textContent = paused ? "Resume" : "Pause";
  $("pause").setAttribute("aria-pressed", String(paused));
  $("gpu-note").textContent = s.gpu
    ? `GPU: ${s.gpu}. In use: ${s.backend ?? "starting"}.`
    : `No usable GPU found; Auto uses the CPU. In use: ${s.backend ?? "starting"}.`;
  if (state) renderNoise(state.settings, s.voice_scales);
}

/** The clause on show (its utterance and text) and the last word heard in it. */
let shown = { id: -1, current: "" };
let lastWord = "";

function renderSpeaking(/** @type {import("./api.js").Speaking} */ sp) {
  const now = $("now");
  if (sp.done) {
    now.dataset.done = "true";
    return;
  }
  now.dataset.done = "false";
  now.dataset.source = sp.source;
  if (sp.id !== shown.id) lastWord = "";
  shown = { id: sp.id, current: sp.current };
  const mark = document.createElement("mark");
  mark.className = "clause";
  mark.textContent = sp.current;
  const label = document.createElement("span");
  label.className = "source";
  label.textContent = `${SOURCE_TEXT[sp.source]}: `;
  now.replaceChildren(label, sp.before, mark, sp.after);
  keepInView(mark);
}

/** Marks the word being heard inside the clause's mark. Focus and selection stay where they are. */
function renderWord(/** @type {import("./api.js").SpokenWord} */ w) {
  const clause = $("now").querySelector("mark.clause");
  if (!clause || w.id !== shown.id || w.end > shown.current.length) return;
  const word = document.createElement("mark");
  word.className = "word";
  word.setAttribute("aria-current", "true");
  word.textContent = shown.current.slice(w.start, w.end);
  lastWord = word.textContent;
  clause.replaceChildren(shown.current.slice(0, w.start), word, shown.current.slice(w.end));
  keepInView(word);
}

/** Scrolls the reading panel (never the page) so that `el` is in sight. */
function keepInView(/** @type {HTMLElement} */ el) {
  const box = $("now");
  const b = box.getBoundingClientRect();
  const r = el.getBoundingClientRect();
  if (r.top < b.top || r.bottom > b.bottom) box.scrollTop += r.top - b.top - box.clientHeight / 3;
}

function renderHistory(/** @type {import("./api.js").HistoryItem[]} */ items) {
  if (state) state.history = items;
  const list = $("history-list");
  const rows = items.map((it) => {
    const li = document.createElement("li");
    const meta = document.createElement("span");
    meta.className = "meta";
    const when = new Date(it.at_ms).toLocaleTimeString();
    const onset = it.onset_ms == null ? "" : `, first sound ${Math.round(it.onset_ms)} ms`;
    meta.textContent = `${SOURCE_TEXT[it.source]}, ${when}, ${it.chars} characters${onset}`;
    const text = document.createElement("span");
    text.className = "preview";
    text.textContent = it.preview;
    const again = document.createElement("button");
    again.type = "button";
    again.textContent = "Read again";
    again.setAttribute("aria-label", `Read again: ${it.preview.slice(0, 60)}`);
    again.addEventListener("click", () => run(api.replayHistory(it.id)));
    li.append(text, meta, again);
    return li;
  });
  if (rows.length === 0) {
    const li = document.createElement("li");
    li.className = "muted";
    li.textContent = "Nothing read yet.";
    rows.push(li);
  }
  list.replaceChildren(...rows);
}

function setIfIdle(/** @type {any} */ el, /** @type {any} */ value, prop = "value") {
  // Never overwrite the control the user is working in.
  if (document.activeElement !== el) el[prop] = value;
}

function renderSettings(/** @type {Settings} */ s) {
  const html = document.documentElement;
  html.dataset.theme = s.theme;
  html.dataset.textScale = String(s.text_scale);
  const voices = state?.voices ?? [];
  const select = $("voice");
  const options = voices.map((v) => {
    const o = document.createElement("option");
    o.value = v.name;
    o.textContent = `${v.name} (${v.sample_rate} Hz, ${v.size_mb} MB)`;
    return o;
  });
  if (options.length === 0) {
    const o = document.createElement("option");
    o.value = "";
    o.textContent = "No voice installed";
    options.push(o);
  }
  if (document.activeElement !== select) {
    select.replaceChildren(...options);
    select.value = s.voice ?? state?.status.voice ?? voices[0]?.name ?? "";
  }
  renderSpeakers(s.speaker);
  setIfIdle($("rate"), s.rate);
  $("rate-out").textContent = `${s.rate.toFixed(2)}×`;
  $("rate").setAttribute("aria-valuetext", `${s.rate.toFixed(2)} times normal speed`);
  setIfIdle($("pitch"), s.pitch);
  $("pitch-out").textContent = pitchText(s.pitch);
  $("pitch").setAttribute("aria-valuetext", pitchText(s.pitch));
  setIfIdle($("volume"), Math.round(s.volume * 100));
  $("volume-out").textContent = `${Math.round(s.volume * 100)}%`;
  const fixed = typeof s.step_mode === "object";
  $("steps-auto").checked = !fixed;
  $("steps-fixed").checked = fixed;
  setIfIdle($("step-frames"), s.step_frames);
  $("step-frames").disabled = !fixed;
  setIfIdle($("backend"), s.backend);
  setIfIdle($("gpu-engine"), s.gpu_engine);
  $("auto-read").checked = s.auto_read;
  $("start-at-login").checked = s.start_at_login;
  $("save-history").checked = s.save_history;
  setIfIdle($("theme"), s.theme);
  setIfIdle($("text-scale"), String(s.text_scale));
  setIfIdle($("voice-catalogue"), s.voice_catalogue ?? "");
  if (state) renderNoise(s, state.status.voice_scales);
  renderShortcuts(s);
  $("history-where").textContent = s.save_history
    ? "The last 20 items, also saved on this computer (turn off in Settings to delete them)."
    : "The last 20 items, in memory only: they are gone when Hark quits.";
}

/** The speakers of the voice chosen in the Voice list: the Speaker list, shown only for a voice
 * with several speakers, on `wanted` when that voice has it, else on its first speaker. */
function renderSpeakers(/** @type {string | null} */ wanted) {
  const voice = (state?.voices ?? []).find((v) => v.name === $("voice").value);
  const speakers = voice?.speakers ?? [];
  const select = /** @type {HTMLSelectElement} */ ($("speaker"));
  $("speaker-field").hidden = speakers.length < 2;
  select.disabled = speakers.length < 2;
  if (document.activeElement === select) return;
  select.replaceChildren(
    ...speakers.map((name, id) => {
      const o = document.createElement("option");
      o.value = name;
      o.textContent = name === String(id) ? `Speaker ${id}` : `${name} (speaker ${id})`;
      return o;
    }),
  );
  select.value = wanted !== null && speakers.includes(wanted) ? wanted : (speakers[0] ?? "");
}

/** The noise sliders: the setting, else the voice's own value (which Rust sends). */
function renderNoise(/** @type {Settings} */ s, /** @type {import("./api.js").Scales} */ voice) {
  const ns = s.noise_scale;
  const nw = s.noise_w;
  setIfIdle($("noise-scale"), ns ?? voice.noise_scale);
  setIfIdle($("noise-w"), nw ?? voice.noise_w);
  $("noise-scale-out").textContent = ns == null ? "voice default" : ns.toFixed(2);
  $("noise-w-out").textContent = nw == null ? "voice default" : nw.toFixed(2);
}

function renderShortcuts(/** @type {Settings} */ s) {
  const box = $("shortcut-fields");
  const report = state?.shortcuts ?? [];
  if (box.children.length === 0) {
    for (const key of Object.keys(SHORTCUT_LABELS)) {
      const wrap = document.createElement("div");
      wrap.className = "shortcut";
      const label = document.createElement("label");
      label.htmlFor = `sc-${key}`;
      label.className = "block";
      label.textContent = SHORTCUT_LABELS[key];
      const input = document.createElement("input");
      input.type = "text";
      input.id = `sc-${key}`;
      input.dataset.key = key;
      input.spellcheck = false;
      input.autocomplete = "off";
      input.setAttribute("aria-describedby", `sc-${key}-problem shortcuts-help`);
      const problem = document.createElement("p");
      problem.id = `sc-${key}-problem`;
      problem.className = "problem";
      input.addEventListener("change", saveFromForm);
      wrap.append(label, input, problem);
      box.append(wrap);
    }
  }
  for (const key of Object.keys(SHORTCUT_LABELS)) {
    const input = $(`sc-${key}`);
    setIfIdle(input, s.shortcuts[key]);
    const r = report.find((x) => x.action === key);
    const bad = r && !r.ok;
    input.setAttribute("aria-invalid", String(Boolean(bad)));
    $(`sc-${key}-problem`).textContent = bad ? r.problem : "";
  }
  const keys = {
    speak_clipboard: "speak-clipboard", speak_selection: "speak-selection", pause_resume: "pause", stop: "stop",
    previous_sentence: "previous-sentence", repeat_sentence: "repeat-sentence", next_sentence: "next-sentence",
    back_5s: "back-5s", forward_5s: "forward-5s", read_from_cursor: "read-from-cursor",
  };
  for (const [key, id] of Object.entries(keys)) {
    const accel = s.shortcuts[key];
    if (accel) $(id).setAttribute("aria-keyshortcuts", accel.replaceAll("Ctrl", "Control"));
    else $(id).removeAttribute("aria-keyshortcuts");
    $(id).title = accel ? `Shortcut: ${accel}` : "";
  }
}

function renderSources(/** @type {import("./api.js").SourcesStatus} */ src) {
  $("stat-watch").textContent = { on: "On (auto-read)", off: "Off", unavailable: "Unavailable" }[src.watch];
  $("watch-note").hidden = !src.note;
  $("watch-note").textContent = src.note ?? "";
  $("follow-state").textContent = src.follow ? `Following ${src.follow}.` : "Not following anything.";
  $("follow-stop").disabled = !src.follow;
}

function pitchText(/** @type {number} */ st) {
  const n = Math.abs(st) === 1 ? "semitone" : "semitones";
  return st === 0 ? "0 semitones" : `${st > 0 ? "+" : "−"}${Math.abs(st)} ${n}`;
}

function renderAll(/** @type {AppState} */ s) {
  state = s;
  $("rate").min = String(s.limits.rate_min);
  $("rate").max = String(s.limits.rate_max);
  $("pitch").min = String(-s.limits.pitch_max);
  $("pitch").max = String(s.limits.pitch_max);
  renderStatus(s.status);
  renderSettings(s.settings);
  renderHistory(s.history);
  renderSources(s.sources);
  $("install-default").hidden = !s.default_voice_available;
  $("onboarding-missing").hidden = s.default_voice_available;
}

// ---- actions -------------------------------------------------------------------------------

/** Runs a command; a rejection becomes a visible, announced error. */
/** "1 min 5 s", "40 s": a duration as it is read out. */
function spokenDuration(/** @type {number} */ seconds) {
  const s = Math.max(0, Math.round(seconds));
  const m = Math.floor(s / 60);
  return m ? `${m} min ${s % 60} s` : `${s} s`;
}

/** Export…: to the typed path, or first to one chosen in the save dialog. */
async function startExport() {
  let path = $("export-path").value.trim();
  if (!path) {
    path = await run(api.pickExportPath());
    if (!path) return;
    $("export-path").value = path;
  }
  await run(api.exportStart($("typed").value, path));
}

/** An export's progress: the bar and its line; start, end and failure are announced. */
function renderExport(/** @type {import("./api.js").ExportProgress} */ p) {
  const bar = /** @type {HTMLProgressElement} */ ($("export-progress"));
  const line = $("export-state");
  $("export-status").hidden = false;
  $("export-start").disabled = p.stage === "running";
  $("export-cancel").disabled = p.stage !== "running";
  const name = p.path.split(/[\\/]/).pop() || p.path;
  if (p.stage === "running") {
    bar.value = p.fraction;
    const left = p.eta_s == null ? "" : `, about ${spokenDuration(p.eta_s)} left`;
    line.textContent = `Exporting to ${name}: ${Math.round(p.fraction * 100)} %${left}.`;
    // Only the start is announced: a running count would talk over the reading.
    if (p.fraction === 0 && p.audio_s === 0) announce(`Exporting to ${name}.`);
  } else if (p.stage === "done") {
    bar.value = 1;
    line.textContent = `Exported ${spokenDuration(p.audio_s)} of audio to ${p.path}.`;
    announce(line.textContent);
  } else if (p.stage === "cancelled") {
    bar.value = 0;
    line.textContent = "Export cancelled; no file was written.";
    announce(line.textContent);
  } else {
    bar.value = 0;
    line.textContent = `The export failed: ${p.message ?? "unknown error"}`;
    announce(line.textContent, "error");
  }
}

async function run(/** @type {Promise<any>} */ p) {
  try {
    return await p;
  } catch (e) {
    notify({ level: "error", text: String(e) });
    return undefined;
  }
}

/** Reads every control into a Settings object. */
function readForm() {
  if (!state) return null;
  const s = structuredClone(state.settings);
  s.voice = $("voice").value || null;
  // Another voice: its speakers, on the chosen one only if that voice has it.
  if (s.voice !== state.settings.voice) renderSpeakers(state.settings.speaker);
  s.speaker = $("speaker-field").hidden ? null : $("speaker").value || null;
  s.rate = Number($("rate").value);
  s.pitch = Number($("pitch").value);
  s.volume = Number($("volume").value) / 100;
  s.step_frames = Math.max(1, Math.round(Number($("step-frames").value) || 32));
  s.step_mode = $("steps-fixed").checked ? { fixed: s.step_frames } : "auto";
  s.backend = $("backend").value;
  s.gpu_engine = $("gpu-engine").value;
  s.auto_read = $("auto-read").checked;
  s.start_at_login = $("start-at-login").checked;
  s.save_history = $("save-history").checked;
  s.theme = $("theme").value;
  s.text_scale = Number($("text-scale").value);
  s.voice_catalogue = $("voice-catalogue").value.trim() || null;
  for (const key of Object.keys(SHORTCUT_LABELS)) s.shortcuts[key] = $(`sc-${key}`).value.trim();
  return s;
}

async function saveFromForm(/** @type {Event} */ ev) {
  const s = readForm();
  if (!s) return;
  const t = /** @type {any} */ (ev?.target);
  if (t?.id === "noise-scale") s.noise_scale = Number(t.value);
  if (t?.id === "noise-w") s.noise_w = Number(t.value);
  const next = await run(api.saveSettings(s));
  if (next) {
    renderAll(next);
    if (t?.id === "auto-read") announce(s.auto_read ? "Auto-read on." : "Auto-read off.");
  }
}

/** Get voices: the catalogue's voices into the list (a voice with several speakers says how
 * many; its speaker is chosen in Speaker once it is installed). */
async function showCatalogue() {
  announce("Reading the voice catalogue…");
  const voices = await run(api.catalogueVoices());
  if (!voices) return;
  const list = /** @type {HTMLSelectElement} */ ($("catalogue-voices"));
  list.replaceChildren(
    ...voices.map((v) => {
      const o = document.createElement("option");
      o.value = v.name;
      const many = v.speakers > 1 ? `, ${v.speakers} speakers` : "";
      o.textContent = `${v.name}: ${v.language}, ${v.quality}, ${Math.round(v.size_mb)} MB${many}${v.installed ? ", installed" : ""}`;
      return o;
    }),
  );
  const first = voices.findIndex((v) => !v.installed);
  if (first >= 0) list.selectedIndex = first;
  list.disabled = voices.length === 0;
  $("catalogue-install").disabled = voices.length === 0;
  announce(`${voices.length} voices in the catalogue. Choose one in Voices to install.`);
}

/** Reads the text box from its caret (the start of a selection), to the end. */
function readFromCursor() {
  const box = /** @type {HTMLTextAreaElement} */ ($("typed"));
  const rest = box.value.slice(box.selectionStart ?? 0);
  if (!rest.trim()) {
    announce(box.value.trim() ? "Nothing after the cursor." : "The text box is empty.");
    return;
  }
  run(api.speakText(rest));
}

function wire() {
  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => showView(tab.getAttribute("data-view")));
  }
  $("speak-clipboard").addEventListener("click", () => run(api.speakClipboard()));
  $("speak-selection").addEventListener("click", () => run(api.speakSelection()));
  $("stop").addEventListener("click", async () => {
    await run(api.stop());
    // Once, politely: where it stopped.
    announce(lastWord ? `Stopped at “${lastWord}”.` : "Stopped.");
  });
  $("pause").addEventListener("click", () => run(api.togglePause()));
  $("speak-typed").addEventListener("click", () => run(api.speakText($("typed").value)));
  // What happened is announced through the notice the step raises (as for a shortcut).
  for (const b of document.querySelectorAll("button.step")) {
    b.addEventListener("click", () => run(api.navigate(/** @type {any} */ (b.getAttribute("data-step")))));
  }
  $("read-from-cursor").addEventListener("click", readFromCursor);
  $("engine-retry").addEventListener("click", () => run(api.restartEngine()));
  $("install-default").addEventListener("click", () => run(api.installDefaultVoice()));
  for (const b of document.querySelectorAll(".import-voice")) {
    b.addEventListener("click", async () => {
      const path = await run(api.pickFile("voice"));
      if (path) await run(api.importVoice(path));
    });
  }
  $("catalogue-load").addEventListener("click", showCatalogue);
  $("catalogue-install").addEventListener("click", () => {
    const name = $("catalogue-voices").value;
    if (name) run(api.installCatalogueVoice(name));
  });
  $("follow-browse").addEventListener("click", async () => {
    const path = await run(api.pickFile("caption"));
    if (path) $("follow-path").value = path;
  });
  const followHelp = {
    lines: "Hark reads each new line appended to a file or written to a named pipe, in order.",
    revising: "Each line is a JSON message from a live captioner, {\"text\": …, \"final\": true or false}, replacing the unfinished end of the last one. Hark says each word once it stops changing.",
    subtitles: "Hark says each cue of the subtitle file when its time comes, counted from Start following, and speeds a cue up to fit before the next one.",
    mpv: "Start mpv with --input-ipc-server=PATH and give that path here. Hark says the subtitle mpv shows, in step with its pauses, seeks and speed.",
  };
  $("follow-kind").addEventListener("change", () => {
    const kind = $("follow-kind").value;
    $("follow-help").textContent = followHelp[kind];
    $("follow-timing").hidden = !(kind === "subtitles" || kind === "mpv");
  });
  $("follow-start").addEventListener("click", async () => {
    const timing = { max_rate: Number($("follow-max-rate").value), overflow: $("follow-overflow").value };
    const src = await run(api.followStart($("follow-path").value.trim(), $("follow-kind").value, timing));
    if (src) {
      renderSources(src);
      announce(`Following ${src.follow}.`);
    }
  });
  $("follow-stop").addEventListener("click", async () => {
    const src = await run(api.followStop());
    if (src) {
      renderSources(src);
      announce("Stopped following.");
    }
  });
  $("export-start").addEventListener("click", startExport);
  $("export-cancel").addEventListener("click", () => run(api.exportCancel()));
  $("clear-history").addEventListener("click", async () => {
    await run(api.clearHistory());
    announce("History cleared.");
  });
  $("reset-settings").addEventListener("click", async () => {
    const next = await run(api.resetSettings());
    if (next) {
      renderAll(next);
      announce("All settings are back to their defaults.");
    }
  });
  $("noise-default").addEventListener("click", async () => {
    const s = readForm();
    if (!s) return;
    s.noise_scale = null;
    s.noise_w = null;
    const next = await run(api.saveSettings(s));
    if (next) renderAll(next);
  });
  const form = $("settings-form");
  form.addEventListener("submit", (/** @type {Event} */ e) => e.preventDefault());
  for (const id of ["voice", "speaker", "rate", "pitch", "volume", "steps-auto", "steps-fixed", "step-frames", "backend", "gpu-engine",
    "auto-read", "start-at-login", "save-history", "theme", "text-scale", "noise-scale", "noise-w", "voice-catalogue"]) {
    $(id).addEventListener("change", saveFromForm);
  }
  // Live value read-outs while a slider moves; the setting is saved on release.
  $("rate").addEventListener("input", () => ($("rate-out").textContent = `${Number($("rate").value).toFixed(2)}×`));
  $("volume").addEventListener("input", () => ($("volume-out").textContent = `${$("volume").value}%`));
  $("pitch").addEventListener("input", () => ($("pitch-out").textContent = pitchText(Number($("pitch").value))));
}

async function main() {
  wire();
  on.status(renderStatus);
  on.speaking(renderSpeaking);
  on.word(renderWord);
  on.history(renderHistory);
  on.notice(notify);
  on.state(renderAll);
  on.readFromCursor(readFromCursor);
  on.exportProgress(renderExport);
  let tenth = -1;
  on.importProgress((p) => {
    $("import-status").hidden = false;
    $("import-text").textContent = p.message;
    $("import-progress").max = 1;
    if (p.stage === "running" && p.fraction !== null) $("import-progress").value = p.fraction;
    else if (p.stage === "running") $("import-progress").removeAttribute("value");
    else $("import-progress").value = p.stage === "done" ? 1 : 0;
    // A download moves by the percent on screen; a screen reader hears it by the tenth.
    const now = p.stage === "running" && p.fraction !== null ? Math.floor(p.fraction * 10) : -1;
    if (now === -1 || now !== tenth) announce(p.message, p.stage === "failed" ? "error" : "info");
    tenth = now;
  });
  const s = await run(api.getState());
  if (s) {
    renderAll(s);
    for (const n of s.notices) notify(n);
  }
  document.body.dataset.ready = "true";
}

main();
