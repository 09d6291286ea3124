//! Table-driven normaliser tests: `tests/data/normalize_cases.tsv`, one case a line:
//! `input<TAB>expected[<TAB>options]`. `\n` and `\t` in the input are escapes; lines starting
//! with `%%` are comments. Options, comma-separated: `verbosity=none|some|most|all`,
//! `urls=link`, `emoji=skip`, `date=month-day`, `dict=WORD=>REPLACEMENT`,
//! `dictre=REGEX=>REPLACEMENT`. All failures are reported together.

use hark_text::normalize::{
    DateOrder, DictEntry, EmojiMode, NormalizeOptions, PunctuationVerbosity, UrlMode, normalize,
};

fn options(spec: &str) -> NormalizeOptions {
    let mut o = NormalizeOptions::default();
    for opt in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = opt
            .split_once('=')
            .unwrap_or_else(|| panic!("bad option {opt:?}"));
        match k {
            "verbosity" => {
                o.verbosity = match v {
                    "none" => PunctuationVerbosity::None,
                    "some" => PunctuationVerbosity::Some,
                    "most" => PunctuationVerbosity::Most,
                    "all" => PunctuationVerbosity::All,
                    _ => panic!("bad verbosity {v:?}"),
                }
            }
            "urls" => {
                o.urls = if v == "link" {
                    UrlMode::Link
                } else {
                    UrlMode::Compact
                }
            }
            "emoji" => {
                o.emoji = if v == "skip" {
                    EmojiMode::Skip
                } else {
                    EmojiMode::Name
                }
            }
            "date" => {
                o.date_order = if v == "month-day" {
                    DateOrder::MonthDay
                } else {
                    DateOrder::DayMonth
                }
            }
            "dict" | "dictre" => {
                let (p, r) = v
                    .split_once("=>")
                    .unwrap_or_else(|| panic!("bad dict {v:?}"));
                let mut e = DictEntry::word(p, r);
                e.regex = k == "dictre";
                o.dictionary.push(e);
            }
            _ => panic!("unknown option {k:?}"),
        }
    }
    o
}

fn unescape(s: &str) -> String {
    s.replace("\\n", "\n").replace("\\t", "\t")
}

#[test]
fn normalize_table() {
    let path = testkit::workspace_root().join("tests/data/normalize_cases.tsv");
    let data = std::fs::read_to_string(path).expect("read the case table");
    let mut cases = 0;
    let mut failures = Vec::new();
    for (n, line) in data.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with("%%") {
            continue;
        }
        let mut cols = line.split('\t');
        let input = unescape(cols.next().unwrap_or(""));
        let expected = cols
            .next()
            .unwrap_or_else(|| panic!("line {}: no expected column", n + 1));
        let opts = options(cols.next().unwrap_or(""));
        let got = normalize(&input, &opts).text;
        cases += 1;
        if got != expected {
            failures.push(format!(
                "line {}: {input:?}\n   expected: {expected}\n   got:      {got}",
                n + 1
            ));
        }
    }
    assert!(
        cases >= 200,
        "the table should hold at least 200 cases, has {cases}"
    );
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
