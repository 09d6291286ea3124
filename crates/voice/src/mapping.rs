//! ONNX initializer → PyTorch module name. The PyTorch exporter keeps most parameter names,
//! but folds or renames some; those are recovered from the node that consumes them.

use super::onnx::{GraphProto, NodeProto};
use crate::tensor::Tensor;
use std::collections::{BTreeMap, HashMap};

/// Top-level modules of Piper's `SynthesizerTrn` that carry inference weights.
pub const MODULES: [&str; 5] = ["enc_p", "dp", "flow", "dec", "emb_g"];

pub struct Mapped {
    /// PyTorch name → tensor (f32, ONNX shape).
    pub weights: BTreeMap<String, Tensor>,
    /// (ONNX name, PyTorch name) for tensors whose name had to be recovered.
    pub renamed: Vec<(String, String)>,
    /// Initializers that are graph constants, not module weights.
    pub dropped: Vec<String>,
    pub n_initializers: usize,
}

pub fn is_module_name(name: &str) -> bool {
    MODULES.iter().any(|m| {
        name.strip_prefix(m)
            .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// `/flow/flows.0/enc/in_layers.1/Conv` → `flow.flows.0.enc.in_layers.1`: the scope of a node.
fn node_scope(node_name: &str, op: &str) -> Option<String> {
    let path = node_name.strip_prefix('/')?;
    let (scope, last) = path.rsplit_once('/')?;
    // Exporters number repeated ops `Conv_1`; accept the op name with or without a suffix.
    let ok = last == op || last.strip_prefix(op).is_some_and(|s| s.starts_with('_'));
    ok.then(|| scope.replace('/', "."))
}

/// Maps every float initializer that belongs to a module; everything else is dropped.
pub fn map_weights(g: &GraphProto) -> Result<Mapped, String> {
    let mut consumers: HashMap<&str, Vec<(&NodeProto, usize)>> = HashMap::new();
    for node in &g.node {
        for (i, input) in node.input.iter().enumerate() {
            consumers.entry(input.as_str()).or_default().push((node, i));
        }
    }
    let mut out = Mapped {
        weights: BTreeMap::new(),
        renamed: Vec::new(),
        dropped: Vec::new(),
        n_initializers: g.initializer.len(),
    };
    for t in &g.initializer {
        if !t.is_float() {
            out.dropped.push(t.name.clone());
            continue;
        }
        let uses = consumers
            .get(t.name.as_str())
            .map_or(&[][..], Vec::as_slice);
        let (name, take_log) = if is_module_name(&t.name) {
            (t.name.clone(), false)
        } else if let Some(name) = recover_name(&t.name, uses) {
            name
        } else {
            out.dropped.push(t.name.clone());
            continue;
        };
        let shape = t
            .shape()
            .ok_or_else(|| format!("tensor `{}` has a negative dimension", t.name))?;
        let mut data = t.to_f32().map_err(|e| format!("tensor `{}` {e}", t.name))?;
        if take_log {
            if let Some(bad) = data.iter().find(|v| **v <= 0.0 || !v.is_finite()) {
                return Err(format!(
                    "`{}` should hold exp(−logs) > 0 but contains {bad}",
                    t.name
                ));
            }
            // The graph computes ElementwiseAffine's reverse (x − m)·exp(−logs) as a Mul by this
            // folded constant, so it holds exp(−logs): logs = −ln(it).
            data.iter_mut().for_each(|v| *v = -v.ln());
        }
        if let Some(bad) = data.iter().find(|v| !v.is_finite()) {
            return Err(format!(
                "tensor `{}` contains a non-finite value {bad}",
                t.name
            ));
        }
        if out.weights.contains_key(&name) {
            return Err(format!("two ONNX tensors map to the same weight `{name}`"));
        }
        if name != t.name {
            out.renamed.push((t.name.clone(), name.clone()));
        }
        out.weights.insert(name, Tensor::new(shape, data));
    }
    Ok(out)
}

/// Name for an anonymous or folded tensor; the bool says "stored as exp(−value), take −ln".
fn recover_name(onnx_name: &str, uses: &[(&NodeProto, usize)]) -> Option<(String, bool)> {
    // SDP ElementwiseAffine: exporter constant-folded exp(−logs) into `/dp/flows.N/Exp_output_0`.
    if let Some(scope) = onnx_name
        .strip_prefix('/')
        .and_then(|p| p.strip_suffix("/Exp_output_0"))
    {
        let name = format!("{}.logs", scope.replace('/', "."));
        return is_module_name(&name).then_some((name, true));
    }
    // Only trust a single consumer: a shared tensor has no single module owner.
    let [(node, slot)] = uses else { return None };
    let field = match (node.op_type.as_str(), slot) {
        // Weight-norm-folded convs (flow WaveNet) are stored as `onnx::Conv_*`.
        ("Conv" | "ConvTranspose", 1) => "weight",
        ("Conv" | "ConvTranspose", 2) => "bias",
        // The text embedding is stored as `sid` and read by `/enc_p/emb/Gather`.
        ("Gather", 0) => "weight",
        _ => return None,
    };
    let scope = node_scope(&node.name, &node.op_type)?;
    let name = format!("{scope}.{field}");
    is_module_name(&name).then_some((name, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::{TensorProto, data_type};

    fn t(name: &str, dims: Vec<i64>, vals: Vec<f32>) -> TensorProto {
        TensorProto {
            name: name.into(),
            dims,
            data_type: data_type::FLOAT,
            float_data: vals,
            ..Default::default()
        }
    }

    fn node(name: &str, op: &str, inputs: &[&str]) -> NodeProto {
        NodeProto {
            name: name.into(),
            op_type: op.into(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn recovers_trap_names_and_drops_constants() {
        let g = GraphProto {
            node: vec![
                node("/enc_p/emb/Gather", "Gather", &["sid", "input"]),
                node(
                    "/flow/flows.2/enc/res_skip_layers.3/Conv",
                    "Conv",
                    &[
                        "x",
                        "onnx::Conv_1",
                        "flow.flows.2.enc.res_skip_layers.3.bias",
                    ],
                ),
                node("/dp/flows.0/Mul", "Mul", &["z", "/dp/flows.0/Exp_output_0"]),
                node("/enc_p/Mul", "Mul", &["e", "/enc_p/Constant_output_0"]),
            ],
            initializer: vec![
                t("sid", vec![2, 2], vec![1.0, 2.0, 3.0, 4.0]),
                t("onnx::Conv_1", vec![1, 1, 1], vec![5.0]),
                t(
                    "flow.flows.2.enc.res_skip_layers.3.bias",
                    vec![1],
                    vec![0.5],
                ),
                t("/dp/flows.0/Exp_output_0", vec![2, 1], vec![1.0, 2.0]),
                t("/enc_p/Constant_output_0", vec![], vec![13.8]),
                TensorProto {
                    name: "onnx::Split_9".into(),
                    dims: vec![2],
                    data_type: data_type::INT64,
                    int64_data: vec![1, 1],
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let m = map_weights(&g).expect("maps");
        let names: Vec<&str> = m.weights.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "dp.flows.0.logs",
                "enc_p.emb.weight",
                "flow.flows.2.enc.res_skip_layers.3.bias",
                "flow.flows.2.enc.res_skip_layers.3.weight",
            ]
        );
        assert_eq!(m.weights["dp.flows.0.logs"].data, vec![-0.0, -(2f32.ln())]);
        assert_eq!(m.dropped, ["/enc_p/Constant_output_0", "onnx::Split_9"]);
        assert_eq!(m.renamed.len(), 3);
    }

    #[test]
    fn non_positive_exp_is_rejected() {
        let g = GraphProto {
            initializer: vec![t("/dp/flows.0/Exp_output_0", vec![1], vec![0.0])],
            ..Default::default()
        };
        assert!(map_weights(&g).is_err());
    }

    #[test]
    fn node_scope_handles_numbered_ops() {
        assert_eq!(
            node_scope("/dec/ups.0/ConvTranspose", "ConvTranspose").as_deref(),
            Some("dec.ups.0")
        );
        assert_eq!(node_scope("/a/b/Conv_3", "Conv").as_deref(), Some("a.b"));
        assert_eq!(node_scope("/a/b/Convx", "Conv"), None);
        assert_eq!(node_scope("Conv", "Conv"), None);
    }
}
