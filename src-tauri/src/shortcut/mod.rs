//! Global shortcuts through the official plugin. Every problem (unparsable, used twice, taken
//! by another program) is reported per shortcut instead of being dropped silently. This only
//! parses, registers and looks up; `lib.rs` hands a pressed shortcut's action to `actions`.

use crate::settings::{Action, Shortcuts};
use crate::state::ShortcutStatus;
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Mutex;
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_global_shortcut::{GlobalShortcutExt, Shortcut, ShortcutEvent, ShortcutState};

/// Which action each registered shortcut runs (by the plugin's shortcut id).
#[derive(Default)]
pub struct Bindings {
    map: Mutex<HashMap<u32, Action>>,
    report: Mutex<Vec<ShortcutStatus>>,
}

impl Bindings {
    pub fn report(&self) -> Vec<ShortcutStatus> {
        self.report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Parses the shortcuts and finds clashes between them, without touching the system.
pub fn plan(s: &Shortcuts) -> Vec<(Action, String, Result<Shortcut, String>)> {
    let mut seen: HashMap<u32, Action> = HashMap::new();
    s.by_action()
        .into_iter()
        .map(|(action, accel)| {
            let accel = accel.trim().to_string();
            let parsed = if accel.is_empty() {
                Err(String::new())
            } else {
                // The parser's own message points at its bug tracker; say what to write instead.
                Shortcut::from_str(&accel)
                    .map_err(|_| {
                        format!(
                            "“{accel}” is not a shortcut. Write modifiers and one key joined by +, like Ctrl+Alt+R or Super+F8."
                        )
                    })
                    .and_then(|sc| match seen.get(&sc.id()) {
                        Some(other) => Err(format!("Also used for “{}”.", other.label())),
                        None => {
                            seen.insert(sc.id(), action);
                            Ok(sc)
                        }
                    })
            };
            (action, accel, parsed)
        })
        .collect()
}

/// Replaces all registrations with `s`; returns one status per action.
pub fn apply<R: Runtime>(app: &AppHandle<R>, s: &Shortcuts) -> Vec<ShortcutStatus> {
    let gs = app.global_shortcut();
    if let Err(e) = gs.unregister_all() {
        tracing::warn!("cannot clear global shortcuts: {e}");
    }
    let mut map = HashMap::new();
    let report: Vec<ShortcutStatus> = plan(s)
        .into_iter()
        .map(|(action, accel, parsed)| {
            let result = parsed.and_then(|sc| {
                gs.register(sc)
                    .map(|()| {
                        map.insert(sc.id(), action);
                    })
                    .map_err(|e| {
                        format!("Could not register {accel}: another program may use it ({e}).")
                    })
            });
            match result {
                Ok(()) => ShortcutStatus {
                    action: action.key(),
                    accel,
                    ok: true,
                    problem: None,
                },
                // An empty accelerator means "no shortcut", not a problem.
                Err(p) if p.is_empty() => ShortcutStatus {
                    action: action.key(),
                    accel,
                    ok: true,
                    problem: None,
                },
                Err(p) => ShortcutStatus {
                    action: action.key(),
                    accel,
                    ok: false,
                    problem: Some(p),
                },
            }
        })
        .collect();
    if let Some(b) = app.try_state::<Bindings>() {
        *b.map.lock().unwrap_or_else(|e| e.into_inner()) = map;
        *b.report.lock().unwrap_or_else(|e| e.into_inner()) = report.clone();
    }
    report
}

/// For the plugin's handler: the action bound to `shortcut`, on key press.
pub fn pressed(app: &AppHandle, shortcut: &Shortcut, event: ShortcutEvent) -> Option<Action> {
    if event.state() != ShortcutState::Pressed {
        return None;
    }
    app.try_state::<Bindings>().and_then(|b| {
        b.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&shortcut.id())
            .copied()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_parse_without_clashes() {
        assert!(
            plan(&Shortcuts::default())
                .iter()
                .all(|(_, _, r)| r.is_ok())
        );
    }

    #[test]
    fn a_shortcut_used_twice_and_a_bad_one_are_reported() {
        let s = Shortcuts {
            stop: "Ctrl+Alt+R".into(),
            pause_resume: "Ctrl+Nope+Q".into(),
            toggle_auto_read: String::new(),
            ..Shortcuts::default()
        };
        let p = plan(&s);
        assert!(p[0].2.is_ok());
        assert!(p[2].2.as_ref().unwrap_err().contains("Speak selection"));
        assert!(p[3].2.as_ref().unwrap_err().contains("not a shortcut"));
        assert_eq!(p[4].2.as_ref().unwrap_err(), "");
    }
}
