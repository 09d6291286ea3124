//! `sd_hark [CONFIG]`: the speech-dispatcher output module. speech-dispatcher runs it with
//! the path of its configuration file (`hark.conf`); `sd_hark --build-cache [CONFIG]` makes
//! the clip cache for the configured voice and rates and exits (`hark speechd install`
//! runs it, so the first key after installing is already instant).

use hark_speechd::module::{Module, ModuleConfig, Out};
use std::io::BufRead;
use std::sync::Arc;

#[global_allocator]
static ALLOCATOR: hark_alloc::Allocator = hark_alloc::Allocator;

fn main() {
    // Started as the phonemiser child: serve it, and exit.
    hark_engine::espeak::serve_if_child();
    let _ = hark_alloc::configure();
    let overrides = hark_engine::Overrides::from_env();
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let build_cache = args.first().is_some_and(|a| a == "--build-cache");
    if build_cache {
        args.remove(0);
    }
    // HARK_SPEECHD_LOG: the log level before speech-dispatcher's LOGLEVEL arrives.
    let pinned: Option<u32> = std::env::var("HARK_SPEECHD_LOG")
        .ok()
        .and_then(|v| v.parse().ok());
    hark_speechd::init_logging(pinned.unwrap_or(2));
    if pinned.is_some() {
        hark_speechd::pin_log_level();
    }
    let mut config = ModuleConfig::new(overrides);
    if let Some(path) = args.first().filter(|p| !p.is_empty()) {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                if let Err(e) = config.read_file(&text) {
                    eprintln!("sd_hark: {path}: {e}");
                    std::process::exit(1);
                }
            }
            // speech-dispatcher passes a path even when the file is absent: defaults then.
            Err(e) => tracing::info!("no configuration at {path} ({e}); using the defaults"),
        }
    }
    // espeak-ng in a child copy of this binary, so that a crash in it cannot take the
    // desktop's voice down (that text is lost; the next starts a new child).
    if let Err(e) = hark_engine::espeak::isolate_espeak(&config.overrides) {
        tracing::warn!("espeak-ng runs in this process: {e}");
    }
    if build_cache {
        std::process::exit(hark_speechd_build_cache(&config));
    }
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut first = Vec::new();
    match input.read_until(b'\n', &mut first) {
        Ok(n) if n > 0 && first == b"INIT\n" => {}
        _ => {
            eprintln!("ERROR: Server did not start with INIT");
            std::process::exit(3);
        }
    }
    let out = Arc::new(Out::new(Box::new(std::io::stdout())));
    let mut module = Module::new(config, Arc::clone(&out));
    match module.init() {
        Ok(msg) => out.send(&format!("299-{msg}\n299 OK LOADED SUCCESSFULLY")),
        Err(msg) => {
            out.send(&format!("399-{msg}\n399 ERR CANT INIT MODULE"));
            std::process::exit(1);
        }
    }
    let code = module.run(&mut input);
    drop(module);
    std::process::exit(code);
}

/// Builds and saves the clip cache for rate 0 (speech-dispatcher's default).
fn hark_speechd_build_cache(config: &ModuleConfig) -> i32 {
    use std::sync::atomic::AtomicBool;
    let voice = match hark_voice::Voice::load_from(&config.voices_dir, config.voice.as_deref()) {
        Ok(v) => Arc::new(v),
        Err(e) => {
            eprintln!("sd_hark: {e}");
            return 1;
        }
    };
    let path = hark_speechd::cache::path(&config.cache_dir, &voice, 0);
    if hark_speechd::cache::load(&path).is_some() {
        println!("clip cache: {} (already made)", path.display());
        return 0;
    }
    let Some(clips) = hark_speechd::cache::build(&voice, 0, &AtomicBool::new(false)) else {
        eprintln!("sd_hark: the clip cache could not be made");
        return 1;
    };
    match hark_speechd::cache::save(&path, &clips) {
        Ok(()) => {
            println!("clip cache: {} ({} clips)", path.display(), clips.len());
            0
        }
        Err(e) => {
            eprintln!("sd_hark: {}: {e}", path.display());
            1
        }
    }
}
