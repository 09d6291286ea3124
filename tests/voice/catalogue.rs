//! `hark voice list --available` and `hark voice install` against a real HTTP server on the
//! loopback that serves a Piper catalogue and the real voice: progress, a download cut off
//! and resumed with a Range request, and a file that does not match the catalogue.

use md5::{Digest, Md5};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

const HARK: &str = env!("CARGO_BIN_EXE_hark");
const NAME: &str = "en_US-joe-medium";
const MODEL_PATH: &str = "en/en_US/joe/medium/en_US-joe-medium.onnx";

fn real_onnx() -> Option<PathBuf> {
    let p = PathBuf::from(std::env::var_os("HARK_TEST_ONNX")?);
    p.is_file().then_some(p)
}

/// How the server behaves, and what it saw.
#[derive(Default)]
struct Server {
    /// Cut the first download of the model after this many bytes (then close).
    cut_model_after: Option<usize>,
    /// The Range header of each model request ("" for none).
    model_ranges: Vec<String>,
}

/// Serves `catalogue` at /voices.json and `files` (URL path → bytes) until the test ends;
/// returns the catalogue's URL.
fn serve(
    catalogue: String,
    files: Vec<(String, Arc<Vec<u8>>)>,
    state: Arc<Mutex<Server>>,
) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the loopback");
    let url = format!("http://{}/voices.json", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let (catalogue, files, state) = (catalogue.clone(), files.clone(), Arc::clone(&state));
            std::thread::spawn(move || answer(conn, &catalogue, &files, &state));
        }
    });
    url
}

fn answer(
    conn: TcpStream,
    catalogue: &str,
    files: &[(String, Arc<Vec<u8>>)],
    state: &Mutex<Server>,
) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut out = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut range = String::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                break;
            }
            if let Some(v) = h
                .strip_prefix("Range:")
                .or_else(|| h.strip_prefix("range:"))
            {
                range = v.trim().to_string();
            }
        }
        let body: Arc<Vec<u8>> = if path == "/voices.json" {
            Arc::new(catalogue.as_bytes().to_vec())
        } else if let Some((_, b)) = files.iter().find(|(p, _)| *p == path) {
            Arc::clone(b)
        } else {
            let _ = out.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
            continue;
        };
        let is_model = path.ends_with(".onnx");
        let mut cut = None;
        if is_model {
            let mut s = state.lock().unwrap();
            s.model_ranges.push(range.clone());
            cut = s.cut_model_after.take();
        }
        let from: usize = range
            .strip_prefix("bytes=")
            .and_then(|r| r.strip_suffix('-'))
            .and_then(|n| n.parse().ok())
            .filter(|n| *n < body.len())
            .unwrap_or(0);
        let head = if from > 0 {
            format!(
                "HTTP/1.1 206 Partial Content\r\ncontent-length: {}\r\ncontent-range: bytes {from}-{}/{}\r\n\r\n",
                body.len() - from,
                body.len() - 1,
                body.len()
            )
        } else {
            format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len())
        };
        if out.write_all(head.as_bytes()).is_err() {
            return;
        }
        match cut {
            // Promised the whole file, sent a part, hung up: a connection that dropped.
            Some(n) => {
                let _ = out.write_all(&body[from..from + n]);
                let _ = out.shutdown(std::net::Shutdown::Both);
                return;
            }
            None => {
                if out.write_all(&body[from..]).is_err() {
                    return;
                }
            }
        }
    }
}

fn md5_hex(b: &[u8]) -> String {
    Md5::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

/// The catalogue for the real voice (and a multi-speaker one), served with its files.
/// `model_md5` replaces the model's checksum when given.
fn catalogue_for(onnx: &Path, model_md5: Option<&str>, state: Arc<Mutex<Server>>) -> String {
    let model = Arc::new(std::fs::read(onnx).unwrap());
    let config = Arc::new(std::fs::read(format!("{}.json", onnx.display())).unwrap());
    let catalogue = serde_json::json!({
        NAME: {
            "key": NAME, "name": "joe", "quality": "medium", "num_speakers": 1,
            "language": {"code": "en_US", "name_english": "English", "country_english": "United States"},
            "files": {
                MODEL_PATH: {"size_bytes": model.len(),
                             "md5_digest": model_md5.map_or_else(|| md5_hex(&model), str::to_string)},
                format!("{MODEL_PATH}.json"): {"size_bytes": config.len(), "md5_digest": md5_hex(&config)},
            }
        },
        "en_US-many-medium": {
            "language": {"code": "en_US", "name_english": "English"},
            "quality": "medium", "num_speakers": 12,
            "files": {
                "x/en_US-many-medium.onnx": {"size_bytes": 1, "md5_digest": "00"},
                "x/en_US-many-medium.onnx.json": {"size_bytes": 1, "md5_digest": "00"},
            }
        }
    });
    serve(
        catalogue.to_string(),
        vec![
            (format!("/{MODEL_PATH}"), model),
            (format!("/{MODEL_PATH}.json"), config),
        ],
        state,
    )
}

fn hark(voices: &Path, args: &[&str]) -> Output {
    Command::new(HARK)
        .args(args)
        .env("HARK_VOICES_DIR", voices)
        .env_remove("HARK_VOICE_CATALOGUE")
        .env("NO_PROXY", "127.0.0.1")
        .output()
        .expect("run hark")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn installed(voices: &Path) -> Vec<String> {
    hark_voice::list(voices)
        .into_iter()
        .map(|v| v.name)
        .collect()
}

#[test]
fn a_voice_from_the_catalogue_installs_with_progress_and_speaks() {
    let Some(onnx) = real_onnx() else {
        return println!("skipped: voice ONNX not found (set HARK_TEST_ONNX)");
    };
    let state = Arc::new(Mutex::new(Server::default()));
    let url = catalogue_for(&onnx, None, state);
    let voices = tempfile::tempdir().unwrap();
    let list = hark(
        voices.path(),
        &["voice", "list", "--available", "--catalogue", &url],
    );
    let listed = text(&list.stdout);
    assert!(list.status.success(), "{}", text(&list.stderr));
    assert!(listed.contains("2 voices in"), "{listed}");
    let joe = listed
        .lines()
        .find(|l| l.starts_with(NAME))
        .expect("joe listed");
    assert!(joe.contains("English (United States)\tmedium\t"), "{joe}");
    assert!(listed.contains("12 speakers"), "{listed}");

    let out = hark(
        voices.path(),
        &["voice", "install", NAME, "--catalogue", &url],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Progress in tenths, in order, ending whole.
    let tenths: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("hark: {NAME}: ")))
        .map(|l| l.split('%').next().unwrap())
        .collect();
    assert_eq!(tenths.last(), Some(&"100"), "{err}");
    assert!(tenths.len() >= 5, "{err}");
    assert_eq!(installed(voices.path()), [NAME]);
    assert!(
        !voices.path().join(".downloads").join(NAME).exists(),
        "the downloads are gone once installed"
    );
    let again = hark(
        voices.path(),
        &["voice", "list", "--available", "--catalogue", &url],
    );
    assert!(
        text(&again.stdout)
            .lines()
            .any(|l| l.starts_with(NAME) && l.ends_with("installed"))
    );
    // A multi-speaker voice is installed like any other (no longer refused for its
    // speakers): this catalogue does not serve its files, so it fails at the download and
    // leaves nothing installed.
    let many = hark(
        voices.path(),
        &["voice", "install", "en_US-many-medium", "--catalogue", &url],
    );
    assert!(!many.status.success());
    let err = text(&many.stderr);
    assert!(
        !err.contains("several speakers") && err.contains("download"),
        "{err}"
    );
    assert_eq!(installed(voices.path()), [NAME]);

    let wav = voices.path().join("hello.wav");
    let speak = hark(
        voices.path(),
        &[
            "speak",
            "--voice",
            NAME,
            "--out",
            wav.to_str().unwrap(),
            "Installed from the catalogue.",
        ],
    );
    assert!(speak.status.success(), "{}", text(&speak.stderr));
    let samples = hound::WavReader::open(&wav).unwrap().duration();
    assert!(samples > 22_050, "{samples} samples");
}

#[test]
fn a_download_cut_off_resumes_where_it_stopped() {
    let Some(onnx) = real_onnx() else {
        return println!("skipped: voice ONNX not found (set HARK_TEST_ONNX)");
    };
    let cut = 10 << 20;
    let state = Arc::new(Mutex::new(Server {
        cut_model_after: Some(cut),
        ..Default::default()
    }));
    let url = catalogue_for(&onnx, None, Arc::clone(&state));
    let voices = tempfile::tempdir().unwrap();
    let first = hark(
        voices.path(),
        &["voice", "install", NAME, "--catalogue", &url],
    );
    assert!(!first.status.success(), "the cut-off install failed");
    let err = text(&first.stderr);
    assert!(err.contains("cannot download"), "{err}");
    assert!(
        installed(voices.path()).is_empty(),
        "no voice from half a download"
    );
    let part = voices
        .path()
        .join(".downloads")
        .join(NAME)
        .join(format!("{NAME}.onnx.part"));
    let kept = std::fs::metadata(&part).expect("the part is kept").len();
    assert_eq!(kept, cut as u64);

    let second = hark(
        voices.path(),
        &["voice", "install", NAME, "--catalogue", &url],
    );
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert_eq!(installed(voices.path()), [NAME]);
    let ranges = state.lock().unwrap().model_ranges.clone();
    assert_eq!(ranges, ["".to_string(), format!("bytes={cut}-")]);
    // The resumed file is the voice, byte for byte: the import records its SHA-256.
    let config: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            voices
                .path()
                .join(NAME)
                .join(hark_voice::import::CONFIG_FILE),
        )
        .unwrap(),
    )
    .unwrap();
    let sha: String = sha2::Sha256::digest(std::fs::read(&onnx).unwrap())
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect();
    assert_eq!(config["source"]["onnx_sha256"], sha.as_str());
}

#[test]
fn a_file_unlike_the_catalogue_is_deleted_and_nothing_installed() {
    let Some(onnx) = real_onnx() else {
        return println!("skipped: voice ONNX not found (set HARK_TEST_ONNX)");
    };
    let state = Arc::new(Mutex::new(Server::default()));
    let url = catalogue_for(&onnx, Some("0123456789abcdef0123456789abcdef"), state);
    let voices = tempfile::tempdir().unwrap();
    let out = hark(
        voices.path(),
        &["voice", "install", NAME, "--catalogue", &url],
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("is not what the catalogue says"), "{err}");
    assert!(installed(voices.path()).is_empty());
    let staged = voices.path().join(".downloads").join(NAME);
    let left: Vec<_> = std::fs::read_dir(&staged)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        !left
            .iter()
            .any(|n| n.to_string_lossy().ends_with(".onnx.part")),
        "the bad download is deleted: {left:?}"
    );
    // An unreachable catalogue is a clear error, not a hang.
    let gone = hark(
        voices.path(),
        &[
            "voice",
            "list",
            "--available",
            "--catalogue",
            "http://127.0.0.1:9/voices.json",
        ],
    );
    assert!(!gone.status.success());
    assert!(
        text(&gone.stderr).contains("cannot read the voice catalogue"),
        "{}",
        text(&gone.stderr)
    );
}
