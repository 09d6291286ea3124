//! Tells `espeak.rs` where this build's espeak-ng data will be.
//!
//! `espeak-rs-sys` builds espeak-ng 1.52 with cmake in its own `OUT_DIR`, and installs the
//! compiled data (phoneme tables, every language's dictionary) there, in
//! `share/espeak-ng-data`. That crate has no `links` key, so its `OUT_DIR` cannot be passed on
//! to this crate; both `OUT_DIR`s are folders of the same `<target>/<profile>/build`, which is
//! what this script hands to the compiler (`HARK_ESPEAK_BUILD_DIR`). `espeak::built_data_dir`
//! looks for `espeak-rs-sys-*/out/share/espeak-ng-data` there at run time.
//!
//! espeak-ng's static library uses libsonic when cmake finds it (Hark installs
//! `libsonic-dev` for its own speed stage), and `espeak-rs-sys` does not link it: linked here.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // <target>/<profile>/build/hark-text-<hash>/out
    let build = out
        .parent()
        .and_then(|p| p.parent())
        .map(PathBuf::from)
        .unwrap_or_default();
    println!(
        "cargo:rustc-env=HARK_ESPEAK_BUILD_DIR={}",
        build.to_string_lossy()
    );
    println!("cargo:rustc-link-lib=sonic");
}
