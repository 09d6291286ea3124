//! Command-line values for the libraries' enums, by their serde names, so that the CLI, the
//! app's settings and JSON output all spell a choice the same way and clap stays in the CLI.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The serde name of a unit variant.
pub fn name_of<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        other => panic!("not a unit enum variant: {other:?}"),
    }
}

/// A clap value parser accepting the serde names of `all` (listed in `--help`).
pub fn by_name<T>(all: &'static [T]) -> impl TypedValueParser<Value = T>
where
    T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
{
    let names: Vec<clap::builder::PossibleValue> = all
        .iter()
        .map(|v| clap::builder::PossibleValue::new(name_of(v)))
        .collect();
    PossibleValuesParser::new(names).map(|name| {
        serde_json::from_value(serde_json::Value::String(name))
            .expect("clap only passes the listed names")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hark_engine::BackendChoice;
    use hark_text::normalize::DateOrder;

    #[test]
    fn names_are_the_serde_names_and_parse_back() {
        assert_eq!(name_of(&BackendChoice::Cuda), "cuda");
        assert_eq!(name_of(&DateOrder::MonthDay), "month-day");
        let cmd = clap::Command::new("t").arg(
            clap::Arg::new("b")
                .long("b")
                .value_parser(by_name(&BackendChoice::ALL)),
        );
        let m = cmd.try_get_matches_from(["t", "--b", "cpu"]).unwrap();
        assert_eq!(m.get_one::<BackendChoice>("b"), Some(&BackendChoice::Cpu));
    }

    #[test]
    fn an_unknown_name_is_refused() {
        let cmd = clap::Command::new("t").arg(
            clap::Arg::new("b")
                .long("b")
                .value_parser(by_name(&BackendChoice::ALL)),
        );
        assert!(cmd.try_get_matches_from(["t", "--b", "gpu2"]).is_err());
    }
}
