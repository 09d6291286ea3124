//! Units after a number: "5 km", "3.5GHz", "-5°C", "50%", "120 km/h", "10 m²".

use super::ctx::Ctx;

/// (symbol, singular, plural). Case-sensitive: "MB" is megabytes, "Mb" megabits.
const UNITS: &[(&str, &str, &str)] = &[
    ("mm", "millimeter", "millimeters"),
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
    ("mph", "mile per hour", "miles per hour"),
    ("kph", "kilometer per hour", "kilometers per hour"),
    ("mpg", "mile per gallon", "miles per gallon"),
    ("Hz", "hertz", "hertz"),
    ("kHz", "kilohertz", "kilohertz"),
    ("MHz", "megahertz", "megahertz"),
    ("GHz", "gigahertz", "gigahertz"),
    ("B", "byte", "bytes"),
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
    ("k", "thousand", "thousand"),
    ("K", "thousand", "thousand"),
    ("M", "million", "million"),
    ("bn", "billion", "billion"),
    ("tn", "trillion", "trillion"),
];

/// Units that are also common words or letters: only when glued to the number ("5in").
const GLUED_ONLY: &[&str] = &["s", "h", "l", "L", "B", "V", "W", "x", "k", "K", "M"];

/// Compound units written with a slash.
const PER: &[(&str, &str, &str, &str)] = &[
    ("km", "h", "kilometer per hour", "kilometers per hour"),
    ("m", "s", "meter per second", "meters per second"),
    ("km", "s", "kilometer per second", "kilometers per second"),
    ("mi", "h", "mile per hour", "miles per hour"),
];

/// The unit starting at token `e` (right after a number): (end, singular, plural).
pub fn lookup(cx: &Ctx, e: usize) -> Option<(usize, &'static str, &'static str)> {
    let glued = !cx.gap(e);
    let k = cx.skip_gap(e);
    // Temperatures and degrees.
    if cx.is_sym(k, '°') {
        return Some(match cx.word(k + 1) {
            Some("C") => (k + 2, "degree Celsius", "degrees Celsius"),
            Some("F") => (k + 2, "degree Fahrenheit", "degrees Fahrenheit"),
            _ => (k + 1, "degree", "degrees"),
        });
    }
    if glued {
        match cx.sym(k) {
            Some('%') => return Some((k + 1, "percent", "percent")),
            Some('‰') => return Some((k + 1, "per mille", "per mille")),
            _ => {}
        }
    } else if cx.is_sym(k, '%') {
        return Some((k + 1, "percent", "percent"));
    }
    let w = cx.word(k)?;
    // The unit must end the token run: "5 min." yes, "5 minutes" is not "min".
    if cx.word(k + 1).is_some() || cx.num(k + 1).is_some() {
        return None;
    }
    if let (true, Some(b)) = (cx.is_sym(k + 1, '/'), cx.word(k + 2))
        && let Some((_, _, s, p)) = PER.iter().find(|(a, bb, _, _)| *a == w && *bb == b)
    {
        return Some((k + 3, s, p));
    }
    let &(_, s, p) = UNITS.iter().find(|(u, _, _)| *u == w)?;
    if !glued && GLUED_ONLY.contains(&w) {
        return None;
    }
    // "m²", "km³"
    match cx.sym(k + 1) {
        Some('²') => return Some((k + 2, square(s), square(p))),
        Some('³') => return Some((k + 2, cubic(s), cubic(p))),
        _ => {}
    }
    Some((k + 1, s, p))
}

fn square(w: &'static str) -> &'static str {
    match w {
        "meter" => "square meter",
        "meters" => "square meters",
        "kilometer" => "square kilometer",
        "kilometers" => "square kilometers",
        "centimeter" => "square centimeter",
        "centimeters" => "square centimeters",
        "foot" => "square foot",
        "feet" => "square feet",
        "mile" => "square mile",
        "miles" => "square miles",
        _ => w,
    }
}

fn cubic(w: &'static str) -> &'static str {
    match w {
        "meter" => "cubic meter",
        "meters" => "cubic meters",
        "centimeter" => "cubic centimeter",
        "centimeters" => "cubic centimeters",
        "foot" => "cubic foot",
        "feet" => "cubic feet",
        _ => w,
    }
}

/// After a quantity ending at token `e`: read a unit if there is one. Returns where scanning
/// resumes and records the quantity's end (for ranges and "per").
pub fn after_quantity(cx: &mut Ctx, e: usize, one: bool) -> usize {
    let end = match lookup(cx, e) {
        Some((end, s, p)) => {
            let k = cx.skip_gap(e);
            cx.emit(if one { s } else { p }, k, end);
            end
        }
        None => e,
    };
    cx.num_end = end;
    end
}
