//! Units after a number: "5 km", "3.5GHz", "15KG", "-5°C", "50%", "120 km/h", "10 m²",
//! "20 m2", "5 sq ft", "14\"", "5'10\"", "5 mbps"; singular for exactly one, "of a" after a
//! fraction ("half a cup"), the singular as an adjective ("a fourteen-inch laptop").

use super::classify::Class;
use super::ctx::Ctx;
use super::lexer::Kind;
use super::words::cardinal;

/// (symbol, singular, plural). Case-sensitive: "MB" is megabytes, "Mb" megabits.
const UNITS: &[(&str, &str, &str)] = &[
    ("mm", "millimeter", "millimeters"),
    ("µm", "micrometer", "micrometers"),
    ("μm", "micrometer", "micrometers"),
    ("nm", "nanometer", "nanometers"),
    ("in", "inch", "inches"),
    ("cm", "centimeter", "centimeters"),
    ("m", "meter", "meters"),
    ("km", "kilometer", "kilometers"),
    ("kms", "kilometer", "kilometers"),
    ("ft", "foot", "feet"),
    ("yd", "yard", "yards"),
    ("mi", "mile", "miles"),
    ("mg", "milligram", "milligrams"),
    ("g", "gram", "grams"),
    ("kg", "kilogram", "kilograms"),
    ("kgs", "kilogram", "kilograms"),
    ("lb", "pound", "pounds"),
    ("lbs", "pound", "pounds"),
    ("oz", "ounce", "ounces"),
    ("ml", "milliliter", "milliliters"),
    ("mL", "milliliter", "milliliters"),
    ("l", "liter", "liters"),
    ("L", "liter", "liters"),
    ("gal", "gallon", "gallons"),
    ("qt", "quart", "quarts"),
    ("tsp", "teaspoon", "teaspoons"),
    ("tbsp", "tablespoon", "tablespoons"),
    ("cc", "cubic centimeter", "cubic centimeters"),
    ("ha", "hectare", "hectares"),
    ("t", "tonne", "tonnes"),
    ("ms", "millisecond", "milliseconds"),
    ("µs", "microsecond", "microseconds"),
    ("μs", "microsecond", "microseconds"),
    ("ns", "nanosecond", "nanoseconds"),
    ("s", "second", "seconds"),
    ("sec", "second", "seconds"),
    ("secs", "second", "seconds"),
    ("min", "minute", "minutes"),
    ("mins", "minute", "minutes"),
    ("h", "hour", "hours"),
    ("hr", "hour", "hours"),
    ("hrs", "hour", "hours"),
    ("d", "day", "days"),
    ("wk", "week", "weeks"),
    ("wks", "week", "weeks"),
    ("mo", "month", "months"),
    ("mos", "month", "months"),
    ("yr", "year", "years"),
    ("yrs", "year", "years"),
    ("mph", "mile per hour", "miles per hour"),
    ("kph", "kilometer per hour", "kilometers per hour"),
    ("mpg", "mile per gallon", "miles per gallon"),
    ("Hz", "hertz", "hertz"),
    ("kHz", "kilohertz", "kilohertz"),
    ("MHz", "megahertz", "megahertz"),
    ("GHz", "gigahertz", "gigahertz"),
    ("kB", "kilobyte", "kilobytes"),
    ("KB", "kilobyte", "kilobytes"),
    ("MB", "megabyte", "megabytes"),
    ("GB", "gigabyte", "gigabytes"),
    ("TB", "terabyte", "terabytes"),
    ("PB", "petabyte", "petabytes"),
    ("KiB", "kibibyte", "kibibytes"),
    ("MiB", "mebibyte", "mebibytes"),
    ("GiB", "gibibyte", "gibibytes"),
    ("Mb", "megabit", "megabits"),
    ("Gb", "gigabit", "gigabits"),
    ("kbps", "kilobit per second", "kilobits per second"),
    ("Kbps", "kilobit per second", "kilobits per second"),
    ("Mbps", "megabit per second", "megabits per second"),
    ("Gbps", "gigabit per second", "gigabits per second"),
    ("bps", "bit per second", "bits per second"),
    ("fps", "frame per second", "frames per second"),
    ("kPa", "kilopascal", "kilopascals"),
    ("ppm", "part per million", "parts per million"),
    ("W", "watt", "watts"),
    ("kW", "kilowatt", "kilowatts"),
    ("MW", "megawatt", "megawatts"),
    ("Wh", "watt hour", "watt hours"),
    ("kWh", "kilowatt hour", "kilowatt hours"),
    ("mAh", "milliamp hour", "milliamp hours"),
    ("V", "volt", "volts"),
    ("mV", "millivolt", "millivolts"),
    ("kV", "kilovolt", "kilovolts"),
    ("mA", "milliamp", "milliamps"),
    ("dB", "decibel", "decibels"),
    ("px", "pixel", "pixels"),
    ("kcal", "kilocalorie", "kilocalories"),
    ("cal", "calorie", "calories"),
    ("x", "times", "times"),
    // Measure words, for "half a cup", "a five-mile run".
    ("cup", "cup", "cups"),
    ("cups", "cup", "cups"),
    ("mile", "mile", "miles"),
    ("miles", "mile", "miles"),
    ("inch", "inch", "inches"),
    ("inches", "inch", "inches"),
    ("foot", "foot", "feet"),
    ("feet", "foot", "feet"),
    ("pound", "pound", "pounds"),
    ("pounds", "pound", "pounds"),
    ("ounce", "ounce", "ounces"),
    ("ounces", "ounce", "ounces"),
    ("teaspoon", "teaspoon", "teaspoons"),
    ("teaspoons", "teaspoon", "teaspoons"),
    ("tablespoon", "tablespoon", "tablespoons"),
    ("tablespoons", "tablespoon", "tablespoons"),
    ("gallon", "gallon", "gallons"),
    ("gallons", "gallon", "gallons"),
    ("acre", "acre", "acres"),
    ("acres", "acre", "acres"),
    ("hour", "hour", "hours"),
    ("hours", "hour", "hours"),
    ("minute", "minute", "minutes"),
    ("minutes", "minute", "minutes"),
    ("day", "day", "days"),
    ("days", "day", "days"),
    ("week", "week", "weeks"),
    ("weeks", "week", "weeks"),
    ("year", "year", "years"),
    ("years", "year", "years"),
    ("k", "thousand", "thousand"),
    ("K", "thousand", "thousand"),
    ("M", "million", "million"),
    ("bn", "billion", "billion"),
    ("tn", "trillion", "trillion"),
];

/// Units that are also common words or letters: only when glued to the number ("5in").
const GLUED_ONLY: &[&str] = &[
    "s", "h", "l", "L", "V", "W", "x", "k", "K", "M", "in", "d", "t", "ha",
];

/// Other spellings of units (upper case, "Kg", "mbps"), matched after the exact table fails.
/// Keys are lower-case; only units whose lower-case spelling is unambiguous.
const ALIASES: &[(&str, &str)] = &[
    ("mm", "mm"),
    ("cm", "cm"),
    ("km", "km"),
    ("kms", "km"),
    ("ft", "ft"),
    ("yd", "yd"),
    ("mi", "mi"),
    ("mg", "mg"),
    ("kg", "kg"),
    ("kgs", "kg"),
    ("lb", "lb"),
    ("lbs", "lb"),
    ("oz", "oz"),
    ("ml", "ml"),
    ("gal", "gal"),
    ("sec", "sec"),
    ("secs", "sec"),
    ("min", "min"),
    ("mins", "min"),
    ("hr", "hr"),
    ("hrs", "hr"),
    ("mph", "mph"),
    ("kph", "kph"),
    ("kmh", "kph"),
    ("mpg", "mpg"),
    ("hz", "Hz"),
    ("khz", "kHz"),
    ("mhz", "MHz"),
    ("ghz", "GHz"),
    ("kb", "kB"),
    ("mb", "MB"),
    ("gb", "GB"),
    ("tb", "TB"),
    ("kbps", "kbps"),
    ("mbps", "Mbps"),
    ("gbps", "Gbps"),
    ("kw", "kW"),
    ("kwh", "kWh"),
    ("mah", "mAh"),
    ("db", "dB"),
    ("kcal", "kcal"),
];

/// Compound units written with a slash.
const PER: &[(&str, &str, &str, &str)] = &[
    ("km", "h", "kilometer per hour", "kilometers per hour"),
    ("m", "s", "meter per second", "meters per second"),
    ("km", "s", "kilometer per second", "kilometers per second"),
    ("mi", "h", "mile per hour", "miles per hour"),
];

/// Lengths, which take "square" and "cubic".
const LENGTHS: &[&str] = &[
    "mm", "cm", "m", "km", "ft", "yd", "mi", "in", "µm", "μm", "nm",
];

/// A unit's reading, singular and plural.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    pub one: String,
    pub many: String,
}

impl Unit {
    fn new(one: &str, many: &str) -> Self {
        Self {
            one: one.to_string(),
            many: many.to_string(),
        }
    }

    fn prefixed(&self, p: &str) -> Self {
        Self::new(&format!("{p} {}", self.one), &format!("{p} {}", self.many))
    }
}

/// A unit symbol, exactly or by another spelling: (symbol, singular, plural).
fn find(w: &str) -> Option<(&'static str, &'static str, &'static str)> {
    if let Some(&u) = UNITS.iter().find(|(u, _, _)| *u == w) {
        return Some(u);
    }
    if w.len() < 2 || !w.is_ascii() {
        return None;
    }
    let l = w.to_ascii_lowercase();
    let &(_, canon) = ALIASES.iter().find(|(a, _)| *a == l)?;
    UNITS.iter().find(|(u, _, _)| *u == canon).copied()
}

/// The singular reading of a unit symbol ("kg" → "kilogram"), for "per kg".
pub fn singular(w: &str) -> Option<&'static str> {
    find(w).map(|(_, s, _)| s)
}

/// A closing double quote, not inches: an odd number of `"` earlier on the line.
fn closes_quote(cx: &Ctx, k: usize) -> bool {
    let mut n = 0;
    let floor = k.saturating_sub(200);
    let mut j = k;
    while j > floor {
        j -= 1;
        match cx.kind(j) {
            Some(Kind::Space { newlines }) if newlines > 0 => break,
            Some(Kind::Sym('"')) => n += 1,
            _ => {}
        }
    }
    n % 2 == 1
}

/// The unit starting at token `e` (right after a number): (end, reading).
pub fn lookup(cx: &Ctx, e: usize) -> Option<(usize, Unit)> {
    let glued = !cx.gap(e);
    let k = cx.skip_gap(e);
    // Temperatures and degrees.
    if cx.is_sym(k, '°') {
        return Some(match cx.word(k + 1) {
            Some("C") => (k + 2, Unit::new("degree Celsius", "degrees Celsius")),
            Some("F") => (k + 2, Unit::new("degree Fahrenheit", "degrees Fahrenheit")),
            _ => (k + 1, Unit::new("degree", "degrees")),
        });
    }
    match cx.sym(k) {
        Some('%') => return Some((k + 1, Unit::new("percent", "percent"))),
        Some('‰') if glued => return Some((k + 1, Unit::new("per mille", "per mille"))),
        // 14" (inches), 5'10" (feet and inches).
        Some('"') if glued && !closes_quote(cx, k) && cx.word(k + 1).is_none() => {
            return Some((k + 1, Unit::new("inch", "inches")));
        }
        Some('\'') if glued => {
            let inches = cx.skip_gap(k + 1);
            if let Some(n) = cx.num(inches).filter(|n| n.len() <= 2)
                && cx.is_sym(inches + 1, '"')
            {
                let unit = if n == "1" { "inch" } else { "inches" };
                let rest = format!("feet {} {unit}", cardinal(n));
                return Some((
                    inches + 2,
                    Unit::new(&rest.replacen("feet", "foot", 1), &rest),
                ));
            }
            return None;
        }
        _ => {}
    }
    let mut w = cx.word(k)?;
    let mut k = k;
    // "5 sq ft", "5 sq. km"
    let mut square = false;
    if w == "sq" {
        let n = if cx.is_sym(k + 1, '.') { k + 2 } else { k + 1 };
        let u = cx.skip_gap(n);
        if let Some(u_w) = cx.word(u).filter(|u_w| LENGTHS.contains(u_w)) {
            w = u_w;
            k = u;
            square = true;
        }
    }
    if let (true, Some(b)) = (cx.is_sym(k + 1, '/'), cx.word(k + 2))
        && let Some((_, _, s, p)) = PER.iter().find(|(a, bb, _, _)| *a == w && *bb == b)
    {
        return Some((k + 3, Unit::new(s, p)));
    }
    let (sym, s, p) = find(w)?;
    if !glued && !square && GLUED_ONLY.contains(&sym) {
        return None;
    }
    let unit = Unit::new(s, p);
    let length = LENGTHS.contains(&sym);
    if square {
        return Some((k + 1, unit.prefixed("square")));
    }
    // "m²", "km³", and "m2", "m3" written with plain digits.
    match (cx.sym(k + 1), cx.num(k + 1)) {
        (Some('²'), _) if length => return Some((k + 2, unit.prefixed("square"))),
        (Some('³'), _) if length => return Some((k + 2, unit.prefixed("cubic"))),
        (_, Some("2")) if length && cx.word(k + 2).is_none() && cx.num(k + 2).is_none() => {
            return Some((k + 2, unit.prefixed("square")));
        }
        (_, Some("3")) if length && cx.word(k + 2).is_none() && cx.num(k + 2).is_none() => {
            return Some((k + 2, unit.prefixed("cubic")));
        }
        _ => {}
    }
    // The unit must end the token run: "5 min." yes, "5 minutes" is not "min".
    if cx.word(k + 1).is_some() || cx.num(k + 1).is_some() {
        return None;
    }
    Some((k + 1, unit))
}

/// "a"/"an" before a unit's singular ("half an hour").
fn article(unit: &str) -> &'static str {
    let vowel = unit.starts_with(['a', 'e', 'i', 'o', 'u']) || unit.starts_with("hour");
    if vowel && !unit.starts_with("uni") {
        "an"
    } else {
        "a"
    }
}

/// A quantity and its unit.
pub fn measure_words(qty: &Class, unit: &Unit, attributive: bool) -> String {
    match qty {
        // "half a cup", "three quarters of a mile"
        Class::Fraction(f) if f.proper() => {
            let a = article(&unit.one);
            if f.num == "1" && f.den == "2" {
                format!("{}half {a} {}", f.sign.words(), unit.one)
            } else if f.num == "1" && f.sign == super::classify::Sign::None {
                let d = super::words::denominator(&f.den);
                format!("{} {d} of {a} {}", article(&d), unit.one)
            } else {
                format!("{} of {a} {}", f.words(), unit.one)
            }
        }
        Class::Number { sign, lit } => {
            let n = format!("{}{}", sign.words(), lit.words());
            if attributive && !unit.one.contains(' ') && unit.one != unit.many {
                format!("{n}-{}", unit.one)
            } else if lit.is_one() {
                format!("{n} {}", unit.one)
            } else {
                format!("{n} {}", unit.many)
            }
        }
        other => format!("{} {}", other.words(), unit.many),
    }
}
