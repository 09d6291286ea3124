//! The subset of `onnx.proto` (proto3) the voice importer reads, decoded with `prost`.
//! Field tags follow onnx/onnx.proto; fields we don't declare are skipped by prost, so
//! only what the importer needs is listed. `Message` also gives us `encode`, which the
//! tests use to build tiny models.

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct ModelProto {
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    #[prost(string, tag = "2")]
    pub producer_name: String,
    #[prost(string, tag = "3")]
    pub producer_version: String,
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct OperatorSetIdProto {
    #[prost(string, tag = "1")]
    pub domain: String,
    #[prost(int64, tag = "2")]
    pub version: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    #[prost(string, tag = "3")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub op_type: String,
    #[prost(string, tag = "7")]
    pub domain: String,
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct AttributeProto {
    #[prost(string, tag = "1")]
    pub name: String,
    /// AttributeType enum (1 FLOAT, 2 INT, 3 STRING, 4 TENSOR, 6 FLOATS, 7 INTS, ...).
    #[prost(int32, tag = "20")]
    pub r#type: i32,
    #[prost(float, tag = "2")]
    pub f: f32,
    #[prost(int64, tag = "3")]
    pub i: i64,
    #[prost(bytes = "vec", tag = "4")]
    pub s: Vec<u8>,
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    #[prost(float, repeated, tag = "7")]
    pub floats: Vec<f32>,
    #[prost(int64, repeated, tag = "8")]
    pub ints: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    /// TensorProto.DataType (1 FLOAT, 6 INT32, 7 INT64, 10 FLOAT16, 11 DOUBLE, ...).
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    /// Also holds FLOAT16 / BFLOAT16 bit patterns when raw_data is not used.
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    #[prost(string, tag = "8")]
    pub name: String,
    #[prost(bytes = "vec", tag = "9")]
    pub raw_data: Vec<u8>,
    #[prost(double, repeated, tag = "10")]
    pub double_data: Vec<f64>,
    /// 0 DEFAULT (inline), 1 EXTERNAL (data in a side file: not supported).
    #[prost(int32, tag = "14")]
    pub data_location: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct ValueInfoProto {
    #[prost(string, tag = "1")]
    pub name: String,
}

pub mod data_type {
    pub const FLOAT: i32 = 1;
    pub const INT32: i32 = 6;
    pub const INT64: i32 = 7;
    pub const FLOAT16: i32 = 10;
    pub const DOUBLE: i32 = 11;
    pub const BFLOAT16: i32 = 16;
}

const EXTERNAL: i32 = 1;

impl ModelProto {
    pub fn decode_bytes(bytes: &[u8]) -> Result<Self, prost::DecodeError> {
        Self::decode(bytes)
    }
}

impl TensorProto {
    pub fn is_float(&self) -> bool {
        use data_type::*;
        matches!(self.data_type, FLOAT | FLOAT16 | DOUBLE | BFLOAT16)
    }

    /// Shape as `usize`; `None` if a dim is negative (corrupt).
    pub fn shape(&self) -> Option<Vec<usize>> {
        self.dims.iter().map(|&d| usize::try_from(d).ok()).collect()
    }

    /// Values of a floating-point tensor as f32, from `raw_data` (little-endian) or the typed
    /// field. Errors name what is wrong so the importer can report it per tensor.
    pub fn to_f32(&self) -> Result<Vec<f32>, String> {
        use data_type::*;
        if self.data_location == EXTERNAL {
            return Err("stored as ONNX external data, which is not supported".into());
        }
        let shape = self.shape().ok_or("has a negative dimension")?;
        let n = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or("has an impossibly large shape")?;
        let raw = !self.raw_data.is_empty();
        let values: Vec<f32> = match (self.data_type, raw) {
            (FLOAT, true) => le_chunks::<4>(&self.raw_data, n)?
                .map(f32::from_le_bytes)
                .collect(),
            (FLOAT, false) => self.float_data.clone(),
            (DOUBLE, true) => le_chunks::<8>(&self.raw_data, n)?
                .map(|b| f64::from_le_bytes(b) as f32)
                .collect(),
            (DOUBLE, false) => self.double_data.iter().map(|&v| v as f32).collect(),
            (FLOAT16, true) => le_chunks::<2>(&self.raw_data, n)?
                .map(|b| half::f16::from_le_bytes(b).to_f32())
                .collect(),
            (FLOAT16, false) => self
                .int32_data
                .iter()
                .map(|&v| half::f16::from_bits(v as u16).to_f32())
                .collect(),
            (BFLOAT16, true) => le_chunks::<2>(&self.raw_data, n)?
                .map(|b| half::bf16::from_le_bytes(b).to_f32())
                .collect(),
            (BFLOAT16, false) => self
                .int32_data
                .iter()
                .map(|&v| half::bf16::from_bits(v as u16).to_f32())
                .collect(),
            (t, _) => return Err(format!("has non-float data type {t}")),
        };
        if values.len() != n {
            return Err(format!(
                "holds {} values but its shape {shape:?} needs {n}",
                values.len()
            ));
        }
        Ok(values)
    }

    /// Values of an integer tensor (INT64 or INT32), for reading graph constants.
    pub fn to_i64(&self) -> Option<Vec<i64>> {
        use data_type::*;
        let raw = !self.raw_data.is_empty();
        match (self.data_type, raw) {
            (INT64, true) => Some(
                self.raw_data
                    .chunks_exact(8)
                    .map(|b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                    .collect(),
            ),
            (INT64, false) => Some(self.int64_data.clone()),
            (INT32, true) => Some(
                self.raw_data
                    .chunks_exact(4)
                    .map(|b| i32::from_le_bytes(b.try_into().unwrap_or([0; 4])) as i64)
                    .collect(),
            ),
            (INT32, false) => Some(self.int32_data.iter().map(|&v| v as i64).collect()),
            _ => None,
        }
    }
}

/// Splits `raw` into `n` little-endian chunks of `N` bytes, or says why it can't.
fn le_chunks<const N: usize>(
    raw: &[u8],
    n: usize,
) -> Result<impl Iterator<Item = [u8; N]> + '_, String> {
    if raw.len() != n * N {
        return Err(format!(
            "has {} bytes of raw data, expected {}",
            raw.len(),
            n * N
        ));
    }
    Ok(raw.chunks_exact(N).map(|c| {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        a
    }))
}

impl NodeProto {
    pub fn attr(&self, name: &str) -> Option<&AttributeProto> {
        self.attribute.iter().find(|a| a.name == name)
    }

    /// An INTS attribute such as `strides` or `dilations`.
    pub fn attr_ints(&self, name: &str) -> Option<&[i64]> {
        self.attr(name).map(|a| a.ints.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(dt: i32, dims: Vec<i64>) -> TensorProto {
        TensorProto {
            dims,
            data_type: dt,
            name: "t".into(),
            ..Default::default()
        }
    }

    #[test]
    fn raw_and_typed_floats_agree() {
        let vals = [1.5f32, -2.25, 3.0, 0.125];
        let mut raw = tensor(data_type::FLOAT, vec![2, 2]);
        raw.raw_data = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut typed = tensor(data_type::FLOAT, vec![2, 2]);
        typed.float_data = vals.to_vec();
        assert_eq!(raw.to_f32(), Ok(vals.to_vec()));
        assert_eq!(typed.to_f32(), Ok(vals.to_vec()));
    }

    #[test]
    fn f16_and_f64_decode() {
        let mut h = tensor(data_type::FLOAT16, vec![2]);
        h.int32_data = vec![
            half::f16::from_f32(0.5).to_bits() as i32,
            half::f16::from_f32(-4.0).to_bits() as i32,
        ];
        assert_eq!(h.to_f32(), Ok(vec![0.5, -4.0]));
        let mut d = tensor(data_type::DOUBLE, vec![1]);
        d.raw_data = 2.5f64.to_le_bytes().to_vec();
        assert_eq!(d.to_f32(), Ok(vec![2.5]));
    }

    #[test]
    fn wrong_sizes_and_types_are_errors() {
        let mut t = tensor(data_type::FLOAT, vec![3]);
        t.raw_data = vec![0; 8];
        assert!(t.to_f32().unwrap_err().contains("raw data"));
        let mut t = tensor(data_type::FLOAT, vec![3]);
        t.float_data = vec![1.0];
        assert!(t.to_f32().is_err());
        let mut t = tensor(data_type::INT64, vec![1]);
        t.int64_data = vec![7];
        assert!(t.to_f32().is_err());
        assert_eq!(t.to_i64(), Some(vec![7]));
        let mut t = tensor(data_type::FLOAT, vec![1]);
        t.data_location = EXTERNAL;
        assert!(t.to_f32().unwrap_err().contains("external"));
    }

    #[test]
    fn model_round_trips_through_protobuf() {
        let mut w = tensor(data_type::FLOAT, vec![1]);
        w.float_data = vec![1.0];
        let m = ModelProto {
            ir_version: 8,
            opset_import: vec![OperatorSetIdProto {
                domain: String::new(),
                version: 15,
            }],
            graph: Some(GraphProto {
                node: vec![NodeProto {
                    name: "/a/Conv".into(),
                    op_type: "Conv".into(),
                    input: vec!["x".into(), "t".into()],
                    attribute: vec![AttributeProto {
                        name: "strides".into(),
                        r#type: 7,
                        ints: vec![8],
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                initializer: vec![w],
                ..Default::default()
            }),
            ..Default::default()
        };
        let back = ModelProto::decode_bytes(&m.encode_to_vec()).expect("decodes");
        assert_eq!(back, m);
        let g = back.graph.expect("graph");
        assert_eq!(g.node[0].attr_ints("strides"), Some(&[8i64][..]));
    }
}
