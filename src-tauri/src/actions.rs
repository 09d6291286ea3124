//! What the user can trigger from a shortcut, the tray or a button: one function each, so all
//! three take exactly the same path.

use crate::events;
use crate::managers::engine::{EngineManager, Step};
use crate::managers::sources::{Request, SourcesManager};
use crate::managers::{self, settings::SettingsManager};
use crate::settings::Action;
use crate::state::{Level, State};
use tauri::{AppHandle, Manager};

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
        Action::PreviousSentence => step(app, Step::PreviousSentence),
        Action::RepeatSentence => step(app, Step::RepeatSentence),
        Action::NextSentence => step(app, Step::NextSentence),
        Action::Back5 => step(app, Step::Back5),
        Action::Forward5 => step(app, Step::Forward5),
        // The caret is the page's: the UI reads from it (the same as its button).
        Action::ReadFromCursor => events::read_from_cursor(app),
        Action::ToggleAutoRead => {
            let settings = app.state::<SettingsManager>();
            let mut s = settings.get();
            s.auto_read = !s.auto_read;
            let on = s.auto_read;
            if let Err(e) = managers::apply_settings(app, s) {
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

/// Steps through what is being read, and says so (or that nothing is).
fn step(app: &AppHandle, step: Step) {
    match app.state::<EngineManager>().navigate(step) {
        Ok(()) => events::notice(app, Level::Info, step.done()),
        Err(e) => events::notice(app, Level::Info, &e),
    }
}
