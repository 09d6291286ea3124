//! Long-lived app state, one manager per concern, each held with `app.manage()`.
pub mod engine;
pub mod history;
pub mod settings;
pub mod sources;
