//! `hark speechd install` and `uninstall` on a configuration folder of their own (no server).

use super::sd::{HARK, sd_hark};
use std::process::Command;

fn hark(args: &[&str], dir: &std::path::Path) -> String {
    let out = Command::new(HARK)
        .args(["speechd"])
        .args(args)
        .arg("--config-dir")
        .arg(dir)
        .env_remove("XDG_RUNTIME_DIR") // no running server to tell about
        .output()
        .expect("run hark speechd");
    assert!(
        out.status.success(),
        "hark speechd {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn install_default_registers_hark_and_uninstall_removes_exactly_that() {
    let Some(module) = sd_hark() else { return };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("speechd.conf");
    // The user's own file, with a setting of theirs.
    std::fs::write(&conf, "# mine\nDefaultRate 20\n").unwrap();
    let module = module.to_str().unwrap();
    hark(
        &["install", "--default", "--no-cache", "--module", module],
        dir.path(),
    );
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(text.starts_with("# mine\nDefaultRate 20\n"), "{text}");
    assert!(text.contains("AddModule \"hark\""), "{text}");
    assert!(text.contains("DefaultModule hark"), "{text}");
    // Listing one module ends speech-dispatcher's own search: the ones it found stay.
    if std::path::Path::new("/usr/lib/speech-dispatcher-modules/sd_espeak-ng").exists() {
        assert!(text.contains("AddModule \"espeak-ng\""), "{text}");
    }
    let module_conf = dir.path().join("modules/hark.conf");
    assert!(
        std::fs::read_to_string(&module_conf)
            .unwrap()
            .contains("HarkBackend auto")
    );
    assert!(hark(&["status"], dir.path()).contains("installed in"));
    // Again: one block, not two.
    hark(&["install", "--no-cache", "--module", module], dir.path());
    let text = std::fs::read_to_string(&conf).unwrap();
    assert_eq!(text.matches("AddModule \"hark\"").count(), 1, "{text}");
    assert!(!text.contains("DefaultModule hark"), "{text}");
    hark(&["uninstall"], dir.path());
    assert_eq!(
        std::fs::read_to_string(&conf).unwrap(),
        "# mine\nDefaultRate 20\n"
    );
    assert!(!module_conf.exists());
    assert!(hark(&["status"], dir.path()).contains("not installed"));
}
