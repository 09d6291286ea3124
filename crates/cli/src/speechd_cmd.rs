//! `hark speechd install|uninstall|status`: Hark as speech-dispatcher's voice.
//!
//! `install` registers `sd_hark` in the user's speech-dispatcher configuration
//! (`$XDG_CONFIG_HOME/speech-dispatcher/speechd.conf`, made from the system's
//! `/etc/speech-dispatcher/speechd.conf` when the user has none, as `spd-conf -u` does),
//! writes the module's own `modules/hark.conf` and makes the clip cache. speech-dispatcher
//! reads its module list when it starts (a SIGHUP does not add modules), so a running one is
//! stopped with `--restart` (the next client starts it again). Everything it adds to `speechd.conf` sits between
//! two marker lines, so `uninstall` removes exactly that and nothing the user wrote.
//!
//! speech-dispatcher loads every module it finds only while `speechd.conf` has no
//! `AddModule` line; once one is there it loads just those listed. So when the user's file
//! had none, the block also lists the modules speech-dispatcher was finding on its own
//! (espeak-ng and the rest), and the desktop keeps every voice it had.

use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};

const BEGIN: &str =
    "# >>> hark: added by `hark speechd install`; `hark speechd uninstall` removes this block";
const END: &str = "# <<< hark";
/// In the block when `install` made the user's speechd.conf (from the system's).
const CREATED: &str = "# hark: this file was copied from the system's by `hark speechd install`";
const MODULE_CONF_MARK: &str = "# Written by `hark speechd install`.";
const SYSTEM_CONF: &str = "/etc/speech-dispatcher/speechd.conf";
/// Where speech-dispatcher looks for modules on its own (Debian's, then other distributions').
const SYSTEM_MODULE_DIRS: &[&str] = &[
    "/usr/lib/speech-dispatcher-modules",
    "/usr/libexec/speech-dispatcher-modules",
    "/usr/lib/x86_64-linux-gnu/speech-dispatcher-modules",
    "/usr/lib64/speech-dispatcher-modules",
];

#[derive(Subcommand)]
pub enum SpeechdCommand {
    /// Register Hark as a speech-dispatcher voice (`spd-say -o hark`, Orca's "Hark").
    Install(InstallArgs),
    /// Remove what `install` added.
    Uninstall(DirArgs),
    /// Show whether Hark is registered.
    Status(DirArgs),
}

#[derive(Args)]
pub struct DirArgs {
    /// speech-dispatcher's user configuration folder (default:
    /// $XDG_CONFIG_HOME/speech-dispatcher).
    #[arg(long)]
    config_dir: Option<PathBuf>,
    /// Stop the running speech-dispatcher, so that its next client starts it with the new
    /// module list (it reads the list only when it starts).
    #[arg(long)]
    restart: bool,
}

#[derive(Args)]
pub struct InstallArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// Make Hark the default voice of every speech-dispatcher client (Orca included).
    #[arg(long)]
    default: bool,
    /// The module binary (default: `sd_hark` next to this `hark`).
    #[arg(long)]
    module: Option<PathBuf>,
    /// The voice the module speaks with (default: the default voice).
    #[arg(long)]
    voice: Option<String>,
    /// The backend: auto (the GPU when one works), cpu or cuda.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Do not make the clip cache now (the module makes it at its first start).
    #[arg(long)]
    no_cache: bool,
    /// Extra lines for the module's hark.conf (`HarkNoiseScale 0`, `HarkAudio simulated`).
    #[arg(long = "module-option", value_name = "LINE")]
    module_options: Vec<String>,
}

pub fn run(cmd: SpeechdCommand) -> anyhow::Result<()> {
    match cmd {
        SpeechdCommand::Install(a) => install(&a),
        SpeechdCommand::Uninstall(a) => uninstall(&config_dir(&a)?, a.restart),
        SpeechdCommand::Status(a) => {
            let dir = config_dir(&a)?;
            let conf = std::fs::read_to_string(dir.join("speechd.conf")).unwrap_or_default();
            match block(&conf) {
                Some(b) => println!("installed in {}:\n{}", dir.display(), b),
                None => println!("not installed in {}", dir.display()),
            }
            Ok(())
        }
    }
}

fn config_dir(a: &DirArgs) -> anyhow::Result<PathBuf> {
    match &a.config_dir {
        Some(d) => Ok(d.clone()),
        None => Ok(dirs::config_dir()
            .context("no configuration folder ($XDG_CONFIG_HOME or $HOME) is set")?
            .join("speech-dispatcher")),
    }
}

fn install(a: &InstallArgs) -> anyhow::Result<()> {
    let dir = config_dir(&a.dir)?;
    let module = match &a.module {
        Some(m) => m.clone(),
        None => std::env::current_exe()
            .context("cannot find this program's path")?
            .with_file_name("sd_hark"),
    };
    let module = std::fs::canonicalize(&module).with_context(|| {
        format!(
            "the module {} is not there (build it: cargo build -p hark-speechd)",
            module.display()
        )
    })?;
    anyhow::ensure!(
        ["auto", "cpu", "cuda"].contains(&a.backend.as_str()),
        "--backend must be auto, cpu or cuda"
    );
    std::fs::create_dir_all(dir.join("modules"))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let conf_path = dir.join("speechd.conf");
    let (conf, created) = match std::fs::read_to_string(&conf_path) {
        Ok(c) => (c, false),
        Err(_) => (
            std::fs::read_to_string(SYSTEM_CONF).unwrap_or_default(),
            true,
        ),
    };
    let (mut conf, old_block) = remove_block(&conf);
    let created = created || old_block.as_deref().is_some_and(|b| b.contains(CREATED));
    let mut lines = vec![BEGIN.to_string()];
    if created {
        lines.push(CREATED.to_string());
    }
    lines.push(format!(
        "AddModule \"hark\" \"{}\" \"hark.conf\"",
        module.display()
    ));
    if !has_add_module(&conf) {
        // Listing one module ends speech-dispatcher's own discovery: list what it found.
        for (name, bin) in discovered_modules() {
            lines.push(format!("AddModule \"{name}\" \"{bin}\" \"{name}.conf\""));
        }
    }
    if a.default {
        lines.push("DefaultModule hark".into());
    }
    lines.push(END.into());
    if !conf.is_empty() && !conf.ends_with('\n') {
        conf.push('\n');
    }
    conf.push_str(&lines.join("\n"));
    conf.push('\n');
    write_atomic(&conf_path, &conf)?;
    let voices = crate::overrides().voices_dir.clone();
    let mut module_conf = format!(
        "{MODULE_CONF_MARK} The configuration of speech-dispatcher's Hark module (sd_hark).\n\
         HarkVoicesDir \"{}\"\nHarkBackend {}\n",
        voices.display(),
        a.backend
    );
    if let Some(v) = &a.voice {
        module_conf.push_str(&format!("HarkVoice \"{v}\"\n"));
    }
    for line in &a.module_options {
        anyhow::ensure!(!line.contains('\n'), "--module-option takes one line");
        module_conf.push_str(line);
        module_conf.push('\n');
    }
    let module_conf_path = dir.join("modules").join("hark.conf");
    write_atomic(&module_conf_path, &module_conf)?;
    println!("registered {} in {}", module.display(), conf_path.display());
    if !a.no_cache {
        let status = std::process::Command::new(&module)
            .arg("--build-cache")
            .arg(&module_conf_path)
            .status()
            .with_context(|| format!("cannot run {}", module.display()))?;
        anyhow::ensure!(status.success(), "the clip cache could not be made");
    }
    let restarted = a.dir.restart && stop_running();
    if !restarted && running_pid().is_some() {
        println!(
            "speech-dispatcher is running: it loads Hark when it starts again \
             (`hark speechd install --restart`, or log out and in)"
        );
    }
    println!(
        "Hark is speech-dispatcher's module \"hark\": try `spd-say -o hark \"Hello\"`{}",
        if a.default {
            "; it is now the default voice (Orca too)"
        } else {
            "; pick it in Orca under Speech → Speech synthesizer"
        }
    );
    Ok(())
}

fn uninstall(dir: &Path, restart: bool) -> anyhow::Result<()> {
    let conf_path = dir.join("speechd.conf");
    let mut removed = false;
    if let Ok(conf) = std::fs::read_to_string(&conf_path) {
        let (rest, block) = remove_block(&conf);
        if let Some(b) = block {
            removed = true;
            let system = std::fs::read_to_string(SYSTEM_CONF).unwrap_or_default();
            if b.contains(CREATED) && rest.trim_end() == system.trim_end() {
                // The file was the system's copy, made by install: it goes too.
                std::fs::remove_file(&conf_path)
                    .with_context(|| format!("cannot remove {}", conf_path.display()))?;
            } else {
                write_atomic(&conf_path, &rest)?;
            }
        }
    }
    let module_conf = dir.join("modules").join("hark.conf");
    if std::fs::read_to_string(&module_conf).is_ok_and(|c| c.starts_with(MODULE_CONF_MARK)) {
        std::fs::remove_file(&module_conf)
            .with_context(|| format!("cannot remove {}", module_conf.display()))?;
        removed = true;
        // The folder too, if install made it and nothing else is in it.
        let _ = std::fs::remove_dir(dir.join("modules"));
    }
    if removed {
        if restart {
            stop_running();
        }
        println!("removed Hark from {}", dir.display());
    } else {
        println!("Hark was not installed in {}", dir.display());
    }
    Ok(())
}

/// The installed block, if there is one.
fn block(conf: &str) -> Option<String> {
    remove_block(conf).1
}

/// `conf` without the installed block, and the block.
fn remove_block(conf: &str) -> (String, Option<String>) {
    let mut out = String::new();
    let mut block: Option<String> = None;
    let mut inside = false;
    for line in conf.split_inclusive('\n') {
        let bare = line.trim_end();
        if !inside && bare == BEGIN {
            inside = true;
            block.get_or_insert_with(String::new).push_str(line);
            continue;
        }
        if inside {
            block.get_or_insert_with(String::new).push_str(line);
            if bare == END {
                inside = false;
            }
            continue;
        }
        out.push_str(line);
    }
    (out, block)
}

fn has_add_module(conf: &str) -> bool {
    conf.lines()
        .any(|l| l.trim_start().to_ascii_lowercase().starts_with("addmodule"))
}

/// The modules speech-dispatcher finds on its own (`sd_<name>` in its module folders; not
/// `sd_generic`, whose voices need their own configuration files, nor `sd_dummy`).
fn discovered_modules() -> Vec<(String, String)> {
    let mut dirs: Vec<PathBuf> = SYSTEM_MODULE_DIRS.iter().map(PathBuf::from).collect();
    if let Some(home) = dirs::home_dir() {
        dirs.insert(0, home.join(".local/libexec/speech-dispatcher-modules"));
    }
    let mut found: Vec<(String, String)> = Vec::new();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for file in names {
            let Some(name) = file.strip_prefix("sd_") else {
                continue;
            };
            if name.is_empty() || name == "generic" || name == "dummy" || name == "hark" {
                continue;
            }
            if !found.iter().any(|(n, _)| n == name) {
                found.push((name.to_string(), file.clone()));
            }
        }
    }
    found
}

fn write_atomic(path: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = path.with_extension("hark-tmp");
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// The user's running speech-dispatcher, from its pid file.
fn running_pid() -> Option<i32> {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")?;
    let pid_file = Path::new(&runtime).join("speech-dispatcher/pid/speech-dispatcher.pid");
    let pid = std::fs::read_to_string(&pid_file)
        .ok()?
        .trim()
        .parse::<i32>()
        .ok()
        .filter(|&p| p > 1)?;
    // SAFETY: signal 0 only checks that the process exists.
    (unsafe { libc::kill(pid, 0) } == 0).then_some(pid)
}

/// Stops the user's running speech-dispatcher (its clients start it again); true if it
/// stopped.
fn stop_running() -> bool {
    let Some(pid) = running_pid() else {
        return false;
    };
    // SAFETY: a plain kill(2) with the pid from speech-dispatcher's own pid file.
    if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
        return false;
    }
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if running_pid() != Some(pid) {
            println!("stopped speech-dispatcher (pid {pid}); its next client starts it with Hark");
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_comes_out_exactly() {
        let user = "LogLevel 3\n# mine\nAddModule \"x\" \"sd_x\" \"x.conf\"\n";
        let with =
            format!("{user}{BEGIN}\nAddModule \"hark\" \"/b/sd_hark\" \"hark.conf\"\n{END}\n");
        let (rest, b) = remove_block(&with);
        assert_eq!(rest, user);
        assert!(b.unwrap().contains("sd_hark"));
        assert!(has_add_module(user));
        assert!(!has_add_module("#AddModule \"espeak\"\nLogLevel 3\n"));
        assert_eq!(remove_block(user), (user.to_string(), None));
    }
}
