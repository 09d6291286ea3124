//! A tiny `.npy` reader for the oracle's dumps: format versions 1–3, little-endian
//! `f4`/`f8`/`i8`/`i4`, C order only.

use std::path::Path;

#[derive(Clone, Debug, PartialEq)]
pub enum NpyData {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I64(Vec<i64>),
    I32(Vec<i32>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Npy {
    pub shape: Vec<usize>,
    pub data: NpyData,
}

impl Npy {
    pub fn read(path: &Path) -> Result<Self, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
            return Err("not an .npy file".into());
        }
        let (hlen, start) = match bytes[6] {
            1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
            2 | 3 => {
                if bytes.len() < 12 {
                    return Err("truncated header".into());
                }
                (
                    u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                    12,
                )
            }
            v => return Err(format!("unsupported .npy version {v}")),
        };
        let header = bytes.get(start..start + hlen).ok_or("truncated header")?;
        let header = std::str::from_utf8(header).map_err(|e| e.to_string())?;
        let descr = dict_value(header, "descr")?;
        let descr = descr.trim_matches(|c| c == '\'' || c == '"');
        if dict_value(header, "fortran_order")? != "False" {
            return Err("Fortran order is not supported".into());
        }
        let shape_s = dict_value(header, "shape")?;
        let shape: Vec<usize> = shape_s
            .trim_matches(|c| c == '(' || c == ')')
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<usize>()
                    .map_err(|e| format!("bad shape {shape_s}: {e}"))
            })
            .collect::<Result<_, _>>()?;
        let n: usize = shape.iter().product();
        let raw = &bytes[start + hlen..];
        let take = |size: usize| -> Result<&[u8], String> {
            raw.get(..n * size)
                .ok_or_else(|| format!("expected {n} values of {size} bytes, file too short"))
        };
        let data = match descr {
            "<f4" => NpyData::F32(
                take(4)?
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                    .collect(),
            ),
            "<f8" => NpyData::F64(
                take(8)?
                    .chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
                    .collect(),
            ),
            "<i8" => NpyData::I64(
                take(8)?
                    .chunks_exact(8)
                    .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
                    .collect(),
            ),
            "<i4" => NpyData::I32(
                take(4)?
                    .chunks_exact(4)
                    .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
                    .collect(),
            ),
            other => return Err(format!("unsupported dtype {other}")),
        };
        Ok(Self { shape, data })
    }

    /// The values as f32 (f64 is narrowed, ints converted).
    pub fn to_f32(&self) -> Vec<f32> {
        match &self.data {
            NpyData::F32(v) => v.clone(),
            NpyData::F64(v) => v.iter().map(|&x| x as f32).collect(),
            NpyData::I64(v) => v.iter().map(|&x| x as f32).collect(),
            NpyData::I32(v) => v.iter().map(|&x| x as f32).collect(),
        }
    }

    /// The values as i64; errors for floating-point data.
    pub fn to_i64(&self) -> Result<Vec<i64>, String> {
        match &self.data {
            NpyData::I64(v) => Ok(v.clone()),
            NpyData::I32(v) => Ok(v.iter().map(|&x| x as i64).collect()),
            _ => Err("not integer data".into()),
        }
    }
}

/// The raw text of `'key': value` in the header dict (value ends at the next top-level comma).
fn dict_value<'a>(header: &'a str, key: &str) -> Result<&'a str, String> {
    let pat = format!("'{key}':");
    let at = header
        .find(&pat)
        .ok_or_else(|| format!("header has no {key}"))?
        + pat.len();
    let rest = header[at..].trim_start();
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' | '}' if depth == 0 => return Ok(rest[..i].trim()),
            _ => {}
        }
    }
    Err(format!("unterminated value for {key}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy_bytes(descr: &str, shape: &str, payload: &[u8]) -> Vec<u8> {
        let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + h.len() + 1) % 64 != 0 {
            h.push(' ');
        }
        h.push('\n');
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend_from_slice(&(h.len() as u16).to_le_bytes());
        b.extend_from_slice(h.as_bytes());
        b.extend_from_slice(payload);
        b
    }

    #[test]
    fn parses_f32_matrix_and_i64_vector() {
        let vals = [1.0f32, -2.5, 3.0, 0.25, 5.0, 6.0];
        let payload: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let n = Npy::parse(&npy_bytes("<f4", "(2, 3)", &payload)).unwrap();
        assert_eq!(n.shape, vec![2, 3]);
        assert_eq!(n.to_f32(), vals);
        let ints = [7i64, -1];
        let payload: Vec<u8> = ints.iter().flat_map(|v| v.to_le_bytes()).collect();
        let n = Npy::parse(&npy_bytes("<i8", "(2,)", &payload)).unwrap();
        assert_eq!(n.shape, vec![2]);
        assert_eq!(n.to_i64().unwrap(), ints);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(Npy::parse(b"nope").is_err());
        assert!(Npy::parse(&npy_bytes("<f4", "(2, 3)", &[0; 8])).is_err());
        assert!(Npy::parse(&npy_bytes(">f4", "(1,)", &[0; 4])).is_err());
    }
}
