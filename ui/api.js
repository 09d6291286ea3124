// @ts-check
// The typed boundary between the UI and Rust: every command and event the UI uses, with the
// payload shapes of src-tauri/src/{state,settings}.rs. A Rust test (commands::tests) checks
// that the command names, the Settings/Status keys and the backend and GPU engine <select>
// values match.

/** Steps through what is being read (`navigate`). @typedef {"previous_sentence"|"repeat_sentence"|"next_sentence"|"back_5s"|"forward_5s"} Step */

/** @typedef {"speak_selection"|"speak_clipboard"|"stop"|"pause_resume"|"toggle_auto_read"|Step|"read_from_cursor"} ActionKey */

/**
 * @typedef {{ speak_selection: string, speak_clipboard: string, stop: string,
 *   pause_resume: string, toggle_auto_read: string, previous_sentence: string,
 *   repeat_sentence: string, next_sentence: string, back_5s: string, forward_5s: string,
 *   read_from_cursor: string }} Shortcuts
 */

/** The engine's step mode, by its serde names. @typedef {"auto" | { fixed: number }} StepMode */

/**
 * @typedef {{
 *   voice: string | null,
 *   speaker: string | null,
 *   rate: number,
 *   pitch: number,
 *   step_mode: StepMode,
 *   step_frames: number,
 *   volume: number,
 *   backend: "auto" | "cpu" | "cuda",
 *   gpu_engine: "auto" | "graph" | "persistent",
 *   noise_scale: number | null,
 *   noise_w: number | null,
 *   auto_read: boolean,
 *   start_at_login: boolean,
 *   save_history: boolean,
 *   theme: "system" | "light" | "dark",
 *   text_scale: number,
 *   shortcuts: Shortcuts,
 *   voice_catalogue: string | null,
 * }} Settings
 */

/** @typedef {"starting"|"ready"|"speaking"|"paused"|"no_voice"|"no_audio"|"error"} EngineState */

/** @typedef {{ noise_scale: number, length_scale: number, noise_w: number }} Scales */

/**
 * @typedef {{
 *   state: EngineState,
 *   message: string | null,
 *   voice: string | null,
 *   voice_scales: Scales,
 *   backend: string | null,
 *   gpu: string | null,
 *   onset_ms: number | null,
 *   rtf: number | null,
 *   queue_depth: number,
 * }} Status
 */

/** @typedef {"clipboard"|"selection"|"typed"|"caption"|"history"} Source */

/** The word being heard: `current.slice(start, end)` of the Speaking with the same id. */
/** @typedef {{ id: number, start: number, end: number }} SpokenWord */

/**
 * @typedef {{ id: number, source: Source, before: string, current: string, after: string,
 *   done: boolean }} Speaking
 */

/**
 * @typedef {{ id: number, source: Source, preview: string, chars: number, at_ms: number,
 *   onset_ms: number | null }} HistoryItem
 */

/** @typedef {{ level: "info"|"warning"|"error", text: string }} Notice */
/** @typedef {{ stage: "running"|"done"|"failed", message: string, voice: string | null, fraction: number | null }} ImportProgress */
/** @typedef {{ name: string, language: string, quality: string, size_mb: number, speakers: number, installed: boolean }} CatalogueVoice */
/**
 * @typedef {{ stage: "running"|"done"|"failed"|"cancelled", path: string, fraction: number,
 *   eta_s: number | null, audio_s: number, message: string | null }} ExportProgress
 */
/** @typedef {{ watch: "on"|"off"|"unavailable", note: string | null, follow: string | null }} SourcesStatus */
/** @typedef {{ action: ActionKey, accel: string, ok: boolean, problem: string | null }} ShortcutStatus */
/** @typedef {{ name: string, sample_rate: number, dtype: string, size_mb: number, speakers: string[] }} VoiceEntry */

/**
 * @typedef {{
 *   settings: Settings,
 *   voices: VoiceEntry[],
 *   status: Status,
 *   sources: SourcesStatus,
 *   shortcuts: ShortcutStatus[],
 *   history: HistoryItem[],
 *   notices: Notice[],
 *   default_voice_available: boolean,
 *   limits: { rate_min: number, rate_max: number, pitch_max: number, steps_max: number },
 *   version: string,
 * }} AppState
 */

// withGlobalTauri exposes the core and event APIs; no bundler, no remote scripts.
const tauri = /** @type {any} */ (window).__TAURI__;

/**
 * @param {string} name
 * @param {Record<string, unknown>} [args]
 * @returns {Promise<any>}
 */
function call(name, args) {
  return tauri.core.invoke(name, args);
}

export const api = {
  /** @returns {Promise<AppState>} */
  getState: () => call("get_state"),
  /** @param {Settings} settings @returns {Promise<AppState>} */
  saveSettings: (settings) => call("save_settings", { settings }),
  /** @returns {Promise<AppState>} */
  resetSettings: () => call("reset_settings"),
  /** @param {string} text @returns {Promise<number>} */
  speakText: (text) => call("speak_text", { text }),
  /** @returns {Promise<void>} */
  speakClipboard: () => call("speak_clipboard"),
  /** @returns {Promise<void>} */
  speakSelection: () => call("speak_selection"),
  /** @returns {Promise<void>} */
  stop: () => call("stop"),
  /** @returns {Promise<EngineState>} */
  togglePause: () => call("toggle_pause"),
  /** @param {Step} step @returns {Promise<void>} */
  navigate: (step) => call("navigate", { step }),
  /** @param {"voice"|"caption"} kind @returns {Promise<string | null>} */
  pickFile: (kind) => call("pick_file", { kind }),
  /** @param {string} path @returns {Promise<void>} */
  importVoice: (path) => call("import_voice", { path }),
  /** @returns {Promise<void>} */
  installDefaultVoice: () => call("install_default_voice"),
  /** @returns {Promise<CatalogueVoice[]>} */
  catalogueVoices: () => call("catalogue_voices"),
  /** @param {string} name */
  installCatalogueVoice: (name) => call("install_catalogue_voice", { name }),
  /** @returns {Promise<void>} */
  clearHistory: () => call("clear_history"),
  /** @param {number} id @returns {Promise<number>} */
  replayHistory: (id) => call("replay_history", { id }),
  /**
   * @param {string} path @param {"lines"|"revising"|"subtitles"|"mpv"} kind
   * @param {{max_rate: number, overflow: "shorten"|"drop"}} timing for subtitles and mpv
   * @returns {Promise<SourcesStatus>}
   */
  followStart: (path, kind, timing) => call("follow_start", { path, kind, timing }),
  /** @returns {Promise<SourcesStatus>} */
  followStop: () => call("follow_stop"),
  /** @returns {Promise<void>} */
  restartEngine: () => call("restart_engine"),
  /** @returns {Promise<string | null>} */
  pickExportPath: () => call("pick_export_path"),
  /** @param {string} text @param {string} path @returns {Promise<void>} */
  exportStart: (text, path) => call("export_start", { text, path }),
  /** @returns {Promise<void>} */
  exportCancel: () => call("export_cancel"),
};

/**
 * @template T
 * @param {string} name
 * @param {(payload: T) => void} f
 */
function listen(name, f) {
  return tauri.event.listen(name, (/** @type {{payload: T}} */ e) => f(e.payload));
}

export const on = {
  /** @param {(s: Status) => void} f */
  status: (f) => listen("hark:status", f),
  /** @param {(s: Speaking) => void} f */
  speaking: (f) => listen("hark:speaking", f),
  /** @param {(w: SpokenWord) => void} f */
  word: (f) => listen("hark:word", f),
  /** @param {(n: Notice) => void} f */
  notice: (f) => listen("hark:notice", f),
  /** @param {(h: HistoryItem[]) => void} f */
  history: (f) => listen("hark:history", f),
  /** @param {(s: AppState) => void} f */
  state: (f) => listen("hark:state", f),
  /** @param {(p: ImportProgress) => void} f */
  importProgress: (f) => listen("hark:import", f),
  /** @param {(p: ExportProgress) => void} f */
  exportProgress: (f) => listen("hark:export", f),
  /** A shortcut asks to read the text box from its caret. @param {() => void} f */
  readFromCursor: (f) => listen("hark:read-from-cursor", f),
};
