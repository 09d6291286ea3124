//! What the user can trigger from a shortcut, the tray or a button: one function each, so all
//! three take exactly the same path.

use crate::events::{self, Level};
use crate::managers::engine::{EngineManager, State};
use crate::managers::settings::SettingsManager;
use crate::managers::sources::{Request, SourcesManager};
use tauri::{AppHandle, Manager};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    SpeakSelection,
    SpeakClipboard,
    Stop,
    PauseResume,
    ToggleAutoRead,
}

impl Action {
    /// The key in `settings.shortcuts` and in the UI.
    pub fn key(self) -> &'static str {
        match self {
            Action::SpeakSelection => "speak_selection",
            Action::SpeakClipboard => "speak_clipboard",
            Action::Stop => "stop",
            Action::PauseResume => "pause_resume",
            Action::ToggleAutoRead => "toggle_auto_read",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Action::SpeakSelection => "Speak selection",
            Action::SpeakClipboard => "Speak clipboard",
            Action::Stop => "Stop",
            Action::PauseResume => "Pause or resume",
            Action::ToggleAutoRead => "Auto-read on or off",
        }
    }
}

pub fn perform(app: &AppHandle, action: Action) {
    match action {
        Action::SpeakSelection => app
            .state::<SourcesManager>()
            .request(Request::SpeakSelection),
        Action::SpeakClipboard => app
            .state::<SourcesManager>()
            .request(Request::SpeakClipboard),
        Action::Stop => app.state::<EngineManager>().stop(),
        Action::PauseResume => {
            let st = app.state::<EngineManager>().toggle_pause();
            let msg = if st == State::Paused {
                "Paused."
            } else {
                "Resumed."
            };
            events::notice(app, Level::Info, msg);
        }
        Action::ToggleAutoRead => {
            let settings = app.state::<SettingsManager>();
            let mut s = settings.get();
            s.auto_read = !s.auto_read;
            let on = s.auto_read;
            if let Err(e) = crate::apply_settings(app, s) {
                events::notice(app, Level::Warning, &e);
            }
            events::notice(
                app,
                Level::Info,
                if on {
                    "Auto-read is on: copied text will be read aloud."
                } else {
                    "Auto-read is off."
                },
            );
        }
    }
}
