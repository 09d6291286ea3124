//! Where text comes from besides a direct call: live caption streams (a growing file or a named
//! pipe). The desktop app adds the clipboard and the selection on top (they need a display).

pub mod caption;
pub mod mpv;
pub mod revise;
pub mod subtitles;
