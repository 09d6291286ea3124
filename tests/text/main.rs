//! Integration tests: text.
mod languages;
mod normalize_props;
mod normalize_table;
mod phonemes;
mod segment;

/// A reference file that a project script generated into `$HARK_TEST_DATA`, parsed; `None`
/// after printing the skip line that names the script to run.
fn generated<T: serde::de::DeserializeOwned>(name: &str, script: &str) -> Option<T> {
    let path = testkit::test_data_dir().join(name);
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!(
            "skipped: run scripts/{script} first ({} is missing)",
            path.display()
        );
        return None;
    };
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} is malformed: {e}")))
}

/// Piper's sentences (each a list of one-character strings) with their ids, leaving out the
/// empty ones Piper yields for text with nothing to say (Hark leaves those out).
fn spoken<'a>(
    phonemes: &'a [Vec<String>],
    ids: &'a [Vec<i64>],
) -> impl Iterator<Item = (&'a [String], &'a Vec<i64>)> {
    phonemes
        .iter()
        .zip(ids)
        .filter(|(p, _)| !p.is_empty())
        .map(|(p, i)| (p.as_slice(), i))
}
