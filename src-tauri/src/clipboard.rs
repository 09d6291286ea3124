//! X11 clipboard and selection: change events through XFixes (no polling), the owner's TARGETS
//! (to skip passwords and non-text), and text reads through arboard. Nothing here logs
//! clipboard contents.

use std::collections::HashMap;
use std::time::{Duration, Instant};
use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xfixes::{self, ConnectionExt as _};
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, CreateWindowAux, Window, WindowClass};
use x11rb::rust_connection::RustConnection;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    Clipboard,
    Primary,
}

/// What the selection's owner offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    Text,
    /// Flagged by a password manager: never read aloud.
    Secret,
    /// Only images, files or other data.
    NotText,
    /// Nobody owns the selection.
    Empty,
    /// The owner did not answer TARGETS; try reading text anyway.
    Unknown,
}

/// Targets password managers set to keep clipboard tools away (KDE/KeePassXC, macOS, Windows
/// naming, which some X11 apps copy).
const SECRET_TARGETS: &[&str] = &[
    "x-kde-passwordManagerHint",
    "application/x-nspasteboard-concealed-type",
    "ExcludeClipboardContentFromMonitorProcessing",
];
const TEXT_TARGETS: &[&str] = &[
    "UTF8_STRING",
    "STRING",
    "TEXT",
    "COMPOUND_TEXT",
    "text/plain",
    "text/plain;charset=utf-8",
];

/// Decides from the owner's target names.
pub fn classify<'a>(targets: impl IntoIterator<Item = &'a str>) -> Offer {
    let mut text = false;
    for t in targets {
        if SECRET_TARGETS.contains(&t) {
            return Offer::Secret;
        }
        text |= TEXT_TARGETS.contains(&t);
    }
    if text { Offer::Text } else { Offer::NotText }
}

#[derive(Debug, thiserror::Error)]
pub enum X11Error {
    #[error(
        "no X11 display (DISPLAY is not set){}",
        if std::env::var_os("WAYLAND_DISPLAY").is_some() { "; this is a Wayland session without XWayland" } else { "" }
    )]
    NoDisplay,
    #[error("cannot connect to the X11 display: {0}")]
    Connect(String),
    #[error("X11 error: {0}")]
    Protocol(String),
}

fn perr(e: impl std::fmt::Display) -> X11Error {
    X11Error::Protocol(e.to_string())
}

/// One X11 connection with a hidden window to receive events and conversions on.
pub struct X11 {
    conn: RustConnection,
    win: Window,
    clipboard: u32,
    targets: u32,
    prop: u32,
    /// Atom id → name, for the names `classify` cares about.
    known: HashMap<u32, &'static str>,
}

impl X11 {
    pub fn connect() -> Result<Self, X11Error> {
        if std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
            return Err(X11Error::NoDisplay);
        }
        let (conn, screen) = x11rb::connect(None).map_err(|e| X11Error::Connect(e.to_string()))?;
        let root = conn.setup().roots[screen].root;
        let win = conn.generate_id().map_err(perr)?;
        conn.create_window(
            x11rb::COPY_DEPTH_FROM_PARENT,
            win,
            root,
            0,
            0,
            1,
            1,
            0,
            WindowClass::INPUT_OUTPUT,
            0,
            &CreateWindowAux::new(),
        )
        .map_err(perr)?;
        let atom = |name: &str| -> Result<u32, X11Error> {
            Ok(conn
                .intern_atom(false, name.as_bytes())
                .map_err(perr)?
                .reply()
                .map_err(perr)?
                .atom)
        };
        let mut known = HashMap::new();
        for name in SECRET_TARGETS.iter().chain(TEXT_TARGETS) {
            known.insert(atom(name)?, *name);
        }
        let x = Self {
            clipboard: atom("CLIPBOARD")?,
            targets: atom("TARGETS")?,
            prop: atom("HARK_TARGETS")?,
            known,
            win,
            conn,
        };
        x.conn.flush().map_err(perr)?;
        Ok(x)
    }

    fn atom_of(&self, sel: Selection) -> u32 {
        match sel {
            Selection::Clipboard => self.clipboard,
            Selection::Primary => AtomEnum::PRIMARY.into(),
        }
    }

    /// Asks the X server to tell us whenever the CLIPBOARD gets a new owner.
    pub fn watch_clipboard(&self) -> Result<(), X11Error> {
        self.conn
            .xfixes_query_version(5, 0)
            .map_err(perr)?
            .reply()
            .map_err(|e| X11Error::Protocol(format!("XFixes is not available: {e}")))?;
        self.conn
            .xfixes_select_selection_input(
                self.win,
                self.clipboard,
                xfixes::SelectionEventMask::SET_SELECTION_OWNER,
            )
            .map_err(perr)?;
        self.conn.flush().map_err(perr)
    }

    /// Blocks until the CLIPBOARD has a new, live owner.
    pub fn wait_change(&self) -> Result<(), X11Error> {
        loop {
            match self.conn.wait_for_event().map_err(perr)? {
                Event::XfixesSelectionNotify(ev) if ev.owner != x11rb::NONE => return Ok(()),
                _ => {}
            }
        }
    }

    /// What the owner of `sel` offers (one TARGETS round trip, ~1 ms).
    pub fn offer(&self, sel: Selection) -> Result<Offer, X11Error> {
        let selection = self.atom_of(sel);
        let owner = self
            .conn
            .get_selection_owner(selection)
            .map_err(perr)?
            .reply()
            .map_err(perr)?
            .owner;
        if owner == x11rb::NONE {
            return Ok(Offer::Empty);
        }
        self.conn
            .convert_selection(
                self.win,
                selection,
                self.targets,
                self.prop,
                x11rb::CURRENT_TIME,
            )
            .map_err(perr)?;
        self.conn.flush().map_err(perr)?;
        let deadline = Instant::now() + Duration::from_millis(500);
        loop {
            match self.conn.poll_for_event().map_err(perr)? {
                Some(Event::SelectionNotify(ev)) if ev.selection == selection => {
                    if ev.property == x11rb::NONE {
                        return Ok(Offer::Unknown);
                    }
                    break;
                }
                Some(_) => {}
                None if Instant::now() > deadline => return Ok(Offer::Unknown),
                None => std::thread::sleep(Duration::from_micros(200)),
            }
        }
        let reply = self
            .conn
            .get_property(true, self.win, self.prop, AtomEnum::ATOM, 0, 4096)
            .map_err(perr)?
            .reply()
            .map_err(perr)?;
        let atoms: Vec<u32> = reply.value32().map(|v| v.collect()).unwrap_or_default();
        Ok(classify(
            atoms
                .iter()
                .map(|a| self.known.get(a).copied().unwrap_or("")),
        ))
    }
}

/// Reads text from `sel` through arboard (which handles INCR transfers of large texts).
pub fn read_text(cb: &mut arboard::Clipboard, sel: Selection) -> Result<String, arboard::Error> {
    use arboard::{GetExtLinux, LinuxClipboardKind};
    let kind = match sel {
        Selection::Clipboard => LinuxClipboardKind::Clipboard,
        Selection::Primary => LinuxClipboardKind::Primary,
    };
    cb.get().clipboard(kind).text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_hint_wins_over_text() {
        assert_eq!(
            classify(["UTF8_STRING", "x-kde-passwordManagerHint", "TARGETS"]),
            Offer::Secret
        );
    }

    /// Makes xclip own CLIPBOARD with one target (it also answers TARGETS), as a password
    /// manager or an image editor would.
    fn own_clipboard(target: &str) -> std::process::Child {
        use std::io::Write;
        let mut child = std::process::Command::new("xclip")
            .args(["-selection", "clipboard", "-quiet", "-t", target, "-i"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("xclip");
        let mut input = child.stdin.take().expect("stdin");
        input.write_all(b"hunter2").expect("write");
        child
    }

    /// Through a real X server (skipped without one): the owner's targets decide.
    #[test]
    fn offers_seen_through_x11() {
        let has_xclip = std::process::Command::new("xclip")
            .arg("-version")
            .output()
            .is_ok();
        if std::env::var_os("DISPLAY").is_none() || !has_xclip {
            eprintln!("skipped: no X11 display or no xclip (.ci/run provides both)");
            return;
        }
        let reader = X11::connect().expect("connect reader");
        reader.watch_clipboard().expect("xfixes");
        for (target, want) in [
            ("x-kde-passwordManagerHint", Offer::Secret),
            ("image/png", Offer::NotText),
            ("UTF8_STRING", Offer::Text),
        ] {
            let mut owner = own_clipboard(target);
            reader.wait_change().expect("change event");
            assert_eq!(
                reader.offer(Selection::Clipboard).unwrap(),
                want,
                "{target}"
            );
            owner.kill().expect("kill xclip");
            owner.wait().expect("reap xclip");
        }
    }

    #[test]
    fn text_and_non_text() {
        assert_eq!(classify(["TARGETS", "text/plain"]), Offer::Text);
        assert_eq!(classify(["TARGETS", "image/png"]), Offer::NotText);
        assert_eq!(classify([]), Offer::NotText);
    }
}
