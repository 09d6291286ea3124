// Generates the ACL for the app's own commands so that capabilities/ must grant each one.
fn main() {
    let manifest = tauri_build::AppManifest::new().commands(hark_commands());
    tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest))
        .expect("tauri build script failed");
}

/// Keep in sync with `commands::handlers()` (a unit test checks it).
fn hark_commands() -> &'static [&'static str] {
    include!("src/commands/names.in")
}
