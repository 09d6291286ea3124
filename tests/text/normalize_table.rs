//! Table-driven normaliser tests: `tests/data/normalize_cases.tsv`, one case a line:
//! `input<TAB>expected[<TAB>options]`. `\n` and `\t` in the input are escapes; lines starting
//! with `%%` are comments. A comment `%% class: NAME — what it covers` starts the cases of
//! class NAME, up to the next class header; every class has its own test below
//! (`class_NAME`), so a failing test names the class it covers, and the whole-table test
//! reports its failures grouped by class. Options, comma-separated:
//! `verbosity=none|some|most|all`, `urls=link`, `emoji=skip`, `date=day-month|month-day`,
//! `locale=LOCALE` (the voice's language, for the automatic date order),
//! `dict=WORD=>REPLACEMENT`, `dictre=REGEX=>REPLACEMENT`.

use std::collections::BTreeMap;

use hark_text::normalize::{
    DateOrder, DictEntry, EmojiMode, NormalizeOptions, PunctuationVerbosity, UrlMode, normalize,
};

/// The table must stay at least this big (twice its size before the semiotic classes).
const MIN_CASES: usize = 670;

struct Case {
    line: usize,
    class: String,
    input: String,
    expected: String,
    opts: NormalizeOptions,
}

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
                o.date_order = Some(match v {
                    "month-day" => DateOrder::MonthDay,
                    "day-month" => DateOrder::DayMonth,
                    _ => panic!("bad date order {v:?}"),
                })
            }
            "locale" => o.locale = v.to_string(),
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

fn cases() -> Vec<Case> {
    let path = testkit::workspace_root().join("tests/data/normalize_cases.tsv");
    let data = std::fs::read_to_string(path).expect("read the case table");
    let mut class = String::new();
    let mut out = Vec::new();
    for (n, line) in data.lines().enumerate() {
        if let Some(c) = line.strip_prefix("%%") {
            if let Some(name) = c.trim().strip_prefix("class:") {
                let name = name.split_whitespace().next().unwrap_or("");
                assert!(
                    CLASSES.contains(&name),
                    "line {}: class {name:?} has no test in normalize_table.rs",
                    n + 1
                );
                class = name.to_string();
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        assert!(
            !class.is_empty(),
            "line {}: a case before any class header",
            n + 1
        );
        let mut cols = line.split('\t');
        let input = unescape(cols.next().unwrap_or(""));
        let expected = cols
            .next()
            .unwrap_or_else(|| panic!("line {}: no expected column", n + 1))
            .to_string();
        let opts = options(cols.next().unwrap_or(""));
        out.push(Case {
            line: n + 1,
            class: class.clone(),
            input,
            expected,
            opts,
        });
    }
    out
}

/// The failures among `cases`, one report each.
fn failures<'a>(cases: impl Iterator<Item = &'a Case>) -> Vec<(String, String)> {
    cases
        .filter_map(|c| {
            let got = normalize(&c.input, &c.opts).text;
            (got != c.expected).then(|| {
                let report = format!(
                    "line {}: {:?}\n   expected: {}\n   got:      {got}",
                    c.line, c.input, c.expected
                );
                (c.class.clone(), report)
            })
        })
        .collect()
}

fn class(name: &str) {
    let all = cases();
    let mine: Vec<&Case> = all.iter().filter(|c| c.class == name).collect();
    assert!(
        mine.len() >= 3,
        "class {name}: only {} cases in the table",
        mine.len()
    );
    let failed = failures(mine.iter().copied());
    assert!(
        failed.is_empty(),
        "class {name}: {} of {} cases failed:\n{}",
        failed.len(),
        mine.len(),
        failed
            .iter()
            .map(|(_, r)| r.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn normalize_table() {
    let all = cases();
    let mut by_class: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (c, r) in failures(all.iter()) {
        by_class.entry(c).or_default().push(r);
    }
    let report: Vec<String> = by_class
        .iter()
        .map(|(c, rs)| format!("class {c}: {} failed\n{}", rs.len(), rs.join("\n")))
        .collect();
    assert!(
        report.is_empty(),
        "{} of {} cases failed:\n{}",
        by_class.values().map(Vec::len).sum::<usize>(),
        all.len(),
        report.join("\n")
    );
    assert!(
        all.len() >= MIN_CASES,
        "the table should hold at least {MIN_CASES} cases, has {}",
        all.len()
    );
    for name in CLASSES {
        assert!(
            all.iter().any(|c| c.class == *name),
            "class {name} has a test but no cases"
        );
    }
}

/// One test per class (its name says which), and the list the table's headers must use.
macro_rules! classes {
    ($($test:ident: $name:literal),* $(,)?) => {
        const CLASSES: &[&str] = &[$($name),*];
        $(
            #[test]
            fn $test() {
                class($name);
            }
        )*
    };
}

classes! {
    class_numbers: "numbers",
    class_years: "years",
    class_roman: "roman",
    class_money: "money",
    class_money_edge: "money-edge",
    class_percent: "percent",
    class_times: "times",
    class_times_seconds_zones: "times-seconds-zones",
    class_dates: "dates",
    class_date_order_locale: "date-order-locale",
    class_month_names: "month-names",
    class_fractions: "fractions",
    class_ranges: "ranges",
    class_units: "units",
    class_digit_strings: "digit-strings",
    class_addresses: "addresses",
    class_quarters_codes: "quarters-codes",
    class_ordinals: "ordinals",
    class_abbreviations: "abbreviations",
    class_acronyms: "acronyms",
    class_urls: "urls",
    class_symbols: "symbols",
    class_emoji: "emoji",
    class_markdown: "markdown",
    class_punctuation: "punctuation",
    class_unicode: "unicode",
    class_options: "options",
    class_dictionary: "dictionary",
}
