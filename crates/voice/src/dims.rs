//! Architecture of a Piper VITS voice, read from weight shapes and Conv node attributes, and
//! the full list of weights (with shapes) that architecture needs.

use super::config::ModelDims;
use super::onnx::{GraphProto, NodeProto};
use crate::tensor::Tensor;
use std::collections::{BTreeMap, HashMap};

type W = BTreeMap<String, Tensor>;

/// Piper's rational-quadratic spline tail bound, used if the graph constant can't be found.
pub const PIPER_TAIL_BOUND: f32 = 5.0;

struct Graph<'a> {
    w: &'a W,
    nodes: HashMap<&'a str, &'a NodeProto>,
    consts: HashMap<&'a str, &'a super::onnx::TensorProto>,
}

impl Graph<'_> {
    fn shape(&self, name: &str) -> Result<&[usize], String> {
        self.w
            .get(name)
            .map(|t| t.shape.as_slice())
            .ok_or_else(|| format!("missing weight `{name}`"))
    }

    /// Dimension `i` of a weight that must have `rank` dims.
    fn dim(&self, name: &str, rank: usize, i: usize) -> Result<usize, String> {
        let s = self.shape(name)?;
        if s.len() != rank {
            return Err(format!(
                "weight `{name}` has shape {s:?}, expected {rank} dims"
            ));
        }
        Ok(s[i])
    }

    /// How many of the nodes `f(0), f(1), …` exist, consecutively from 0. Layers are counted
    /// from graph nodes, not weights, so a missing weight is reported as missing instead of
    /// silently shrinking the model.
    fn count(&self, f: impl Fn(usize) -> String) -> usize {
        (0..)
            .take_while(|&i| self.nodes.contains_key(f(i).as_str()))
            .count()
    }

    /// A single-valued INTS attribute (`strides`, `dilations`) of a 1-D conv node.
    fn attr1(&self, node: &str, attr: &str) -> Result<usize, String> {
        let n = self
            .nodes
            .get(node)
            .ok_or_else(|| format!("graph has no node `{node}`"))?;
        match n.attr_ints(attr) {
            Some(&[v]) if v > 0 => Ok(v as usize),
            // ONNX default for a missing strides/dilations attribute is 1.
            None => Ok(1),
            other => Err(format!(
                "node `{node}` has {attr} {other:?}, expected one value"
            )),
        }
    }

    /// A float scalar initializer fed to input `slot` of `node`, if there is one.
    fn scalar_input(&self, node: &str, slot: usize) -> Option<f32> {
        let n = self.nodes.get(node)?;
        let t = self.consts.get(n.input.get(slot)?.as_str())?;
        match t.to_f32().ok()?.as_slice() {
            &[v] if v.is_finite() => Some(v),
            _ => None,
        }
    }

    /// Piper's spline tail bound: the scalar compared against in `/dp/flows.N/LessOrEqual`.
    fn tail_bound(&self, flow: usize) -> Option<f32> {
        self.scalar_input(&format!("/dp/flows.{flow}/LessOrEqual"), 1)
            .filter(|&v| v > 0.0)
    }
}

/// Reads the dimensions. Errors name the missing weight or node.
pub fn read_dims(w: &W, g: &GraphProto) -> Result<ModelDims, String> {
    let gr = Graph {
        w,
        nodes: g.node.iter().map(|n| (n.name.as_str(), n)).collect(),
        consts: g.initializer.iter().map(|t| (t.name.as_str(), t)).collect(),
    };
    let emb = "enc_p.emb.weight";
    let (n_vocab, hidden) = (gr.dim(emb, 2, 0)?, gr.dim(emb, 2, 1)?);
    let l0 = "enc_p.encoder.attn_layers.0";
    let n_layers = gr.count(|i| format!("/enc_p/encoder/attn_layers.{i}/conv_q/Conv"));
    // emb_rel_k is [1 (heads share it), 2·window+1, k_channels]; heads = hidden / k_channels.
    let rel = format!("{l0}.emb_rel_k");
    let (rel_len, k_channels) = (gr.dim(&rel, 3, 1)?, gr.dim(&rel, 3, 2)?);
    if rel_len % 2 == 0 || k_channels == 0 || hidden % k_channels != 0 {
        return Err(format!(
            "`{rel}` shape {:?} doesn't fit hidden {hidden}",
            gr.shape(&rel)?
        ));
    }
    // Cross-check k_channels against the query scale 1/√k_channels (`…/attn_layers.0/Div`).
    if let Some(scale) = gr.scalar_input("/enc_p/encoder/attn_layers.0/Div", 1)
        && (scale - (k_channels as f32).sqrt()).abs() > 1e-3 * scale.abs()
    {
        return Err(format!(
            "attention scale {scale} doesn't match k_channels {k_channels}"
        ));
    }
    let ffn = "enc_p.encoder.ffn_layers.0.conv_1.weight";
    let proj_out = gr.dim("enc_p.proj.weight", 3, 0)?;

    let dp_filter = gr.dim("dp.pre.weight", 3, 0)?;
    let dp_layers = gr.count(|i| format!("/dp/convs/convs_sep.{i}/Conv"));
    let dp_kernel = gr.dim("dp.convs.convs_sep.0.weight", 3, 2)?;
    for i in 0..dp_layers {
        let got = gr.attr1(&format!("/dp/convs/convs_sep.{i}/Conv"), "dilations")?;
        if got != dp_kernel.pow(i as u32) {
            return Err(format!(
                "DDSConv layer {i} has dilation {got}, expected kernel^{i}"
            ));
        }
    }
    // Reverse pass runs the ConvFlows from last to first; those missing were not exported.
    let mut dp_flows: Vec<usize> = (1..64)
        .filter(|n| {
            gr.nodes
                .contains_key(format!("/dp/flows.{n}/proj/Conv").as_str())
        })
        .collect();
    dp_flows.reverse();
    let first_flow = *dp_flows
        .first()
        .ok_or("no duration-predictor ConvFlow (node /dp/flows.N/proj/Conv)")?;
    let spline_out = gr.dim(&format!("dp.flows.{first_flow}.proj.weight"), 3, 0)?;
    if spline_out % 3 != 2 {
        return Err(format!(
            "ConvFlow proj has {spline_out} outputs, not 3·bins−1"
        ));
    }

    let n_couplings = gr.count(|i| format!("/flow/flows.{}/pre/Conv", 2 * i));
    let wn_layers = gr.count(|i| format!("/flow/flows.0/enc/in_layers.{i}/Conv"));
    let flow_kernel = gr.dim("flow.flows.0.enc.in_layers.0.weight", 3, 2)?;
    // WaveNet dilation of layer i is rate^i, so layer 1 gives the rate.
    let flow_rate = if wn_layers > 1 {
        gr.attr1("/flow/flows.0/enc/in_layers.1/Conv", "dilations")?
    } else {
        1
    };
    for i in 0..wn_layers {
        let got = gr.attr1(
            &format!("/flow/flows.0/enc/in_layers.{i}/Conv"),
            "dilations",
        )?;
        if got != flow_rate.pow(i as u32) {
            return Err(format!(
                "flow WaveNet layer {i} has dilation {got}, expected {flow_rate}^{i}"
            ));
        }
    }

    let n_ups = gr.count(|i| format!("/dec/ups.{i}/ConvTranspose"));
    let mut upsample_rates = Vec::new();
    let mut upsample_kernel_sizes = Vec::new();
    for i in 0..n_ups {
        upsample_rates.push(gr.attr1(&format!("/dec/ups.{i}/ConvTranspose"), "strides")?);
        upsample_kernel_sizes.push(gr.dim(&format!("dec.ups.{i}.weight"), 3, 2)?);
    }
    if gr.nodes.contains_key("/dec/resblocks.0/convs1.0/Conv") {
        return Err(
            "HiFi-GAN resblock type \"1\" is not supported (only Piper's type \"2\")".into(),
        );
    }
    let n_res = gr.count(|i| format!("/dec/resblocks.{i}/convs.0/Conv"));
    if n_ups == 0 || n_res == 0 || !n_res.is_multiple_of(n_ups) {
        return Err(format!(
            "decoder has {n_ups} upsamplers and {n_res} resblocks"
        ));
    }
    let mut resblock_kernel_sizes = Vec::new();
    let mut resblock_dilation_sizes = Vec::new();
    for j in 0..n_res / n_ups {
        resblock_kernel_sizes.push(gr.dim(&format!("dec.resblocks.{j}.convs.0.weight"), 3, 2)?);
        let n_convs = gr.count(|k| format!("/dec/resblocks.{j}/convs.{k}/Conv"));
        let dil = (0..n_convs)
            .map(|k| gr.attr1(&format!("/dec/resblocks.{j}/convs.{k}/Conv"), "dilations"))
            .collect::<Result<Vec<_>, _>>()?;
        resblock_dilation_sizes.push(dil);
    }

    // Speakers: the embedding `emb_g` [speakers, gin] exists only in a multi-speaker export.
    let (n_speakers, gin_channels) = if w.contains_key("emb_g.weight") {
        (gr.dim("emb_g.weight", 2, 0)?, gr.dim("emb_g.weight", 2, 1)?)
    } else {
        (1, 0)
    };

    Ok(ModelDims {
        gin_channels,
        n_speakers,
        n_vocab,
        hidden_channels: hidden,
        filter_channels: gr.dim(ffn, 3, 0)?,
        n_heads: hidden / k_channels,
        n_layers,
        ffn_kernel_size: gr.dim(ffn, 3, 2)?,
        window_size: rel_len / 2,
        inter_channels: proj_out / 2,
        dp_filter_channels: dp_filter,
        dp_kernel_size: dp_kernel,
        dp_ddsconv_layers: dp_layers,
        dp_flow_indices: dp_flows.clone(),
        dp_num_bins: (spline_out + 1) / 3,
        // Read from the spline's `x <= tail_bound` constant; Piper hard-codes 5.0, which is the
        // fallback if an exporter folded the comparison differently.
        dp_tail_bound: gr.tail_bound(first_flow).unwrap_or(PIPER_TAIL_BOUND),
        flow_n_couplings: n_couplings,
        flow_wn_layers: wn_layers,
        flow_kernel_size: flow_kernel,
        flow_dilation_rate: flow_rate,
        upsample_initial_channel: gr.dim("dec.conv_pre.weight", 3, 0)?,
        upsample_rates,
        upsample_kernel_sizes,
        resblock_kernel_sizes,
        resblock_dilation_sizes,
        dec_pre_kernel_size: gr.dim("dec.conv_pre.weight", 3, 2)?,
        dec_post_kernel_size: gr.dim("dec.conv_post.weight", 3, 2)?,
    })
}

/// Every weight a Piper VITS with these dims needs (with speakers: `emb_g` and the conditioning
/// convs `dp.cond`, each coupling's `enc.cond_layer` and `dec.cond`), with its ONNX shape
/// (Conv [Cout, Cin, K], ConvTranspose [Cin, Cout, K]), grouped by module.
pub fn required_weights(d: &ModelDims) -> Vec<(String, Vec<usize>)> {
    let mut r: Vec<(String, Vec<usize>)> = Vec::new();
    let conv = |r: &mut Vec<_>, p: String, out: usize, inp: usize, k: usize, bias: bool| {
        r.push((format!("{p}.weight"), vec![out, inp, k]));
        if bias {
            r.push((format!("{p}.bias"), vec![out]));
        }
    };
    let (h, f) = (d.hidden_channels, d.filter_channels);
    // enc_p: text encoder.
    r.push(("enc_p.emb.weight".into(), vec![d.n_vocab, h]));
    for l in 0..d.n_layers {
        let a = format!("enc_p.encoder.attn_layers.{l}");
        let rel = vec![1, 2 * d.window_size + 1, h / d.n_heads.max(1)];
        r.push((format!("{a}.emb_rel_k"), rel.clone()));
        r.push((format!("{a}.emb_rel_v"), rel));
        for c in ["q", "k", "v", "o"] {
            conv(&mut r, format!("{a}.conv_{c}"), h, h, 1, true);
        }
        let ffn = format!("enc_p.encoder.ffn_layers.{l}");
        conv(
            &mut r,
            format!("{ffn}.conv_1"),
            f,
            h,
            d.ffn_kernel_size,
            true,
        );
        conv(
            &mut r,
            format!("{ffn}.conv_2"),
            h,
            f,
            d.ffn_kernel_size,
            true,
        );
        for n in ["norm_layers_1", "norm_layers_2"] {
            r.push((format!("enc_p.encoder.{n}.{l}.gamma"), vec![h]));
            r.push((format!("enc_p.encoder.{n}.{l}.beta"), vec![h]));
        }
    }
    conv(
        &mut r,
        "enc_p.proj".into(),
        2 * d.inter_channels,
        h,
        1,
        true,
    );
    // dp: stochastic duration predictor (inference half).
    let fd = d.dp_filter_channels;
    let ddsconv = |r: &mut Vec<(String, Vec<usize>)>, p: &str| {
        for i in 0..d.dp_ddsconv_layers {
            r.push((
                format!("{p}.convs_sep.{i}.weight"),
                vec![fd, 1, d.dp_kernel_size],
            ));
            r.push((format!("{p}.convs_sep.{i}.bias"), vec![fd]));
            r.push((format!("{p}.convs_1x1.{i}.weight"), vec![fd, fd, 1]));
            r.push((format!("{p}.convs_1x1.{i}.bias"), vec![fd]));
            for n in ["norms_1", "norms_2"] {
                r.push((format!("{p}.{n}.{i}.gamma"), vec![fd]));
                r.push((format!("{p}.{n}.{i}.beta"), vec![fd]));
            }
        }
    };
    conv(&mut r, "dp.pre".into(), fd, h, 1, true);
    ddsconv(&mut r, "dp.convs");
    conv(&mut r, "dp.proj".into(), fd, fd, 1, true);
    r.push(("dp.flows.0.m".into(), vec![2, 1]));
    r.push(("dp.flows.0.logs".into(), vec![2, 1]));
    for n in &d.dp_flow_indices {
        conv(&mut r, format!("dp.flows.{n}.pre"), fd, 1, 1, true);
        ddsconv(&mut r, &format!("dp.flows.{n}.convs"));
        conv(
            &mut r,
            format!("dp.flows.{n}.proj"),
            3 * d.dp_num_bins - 1,
            fd,
            1,
            true,
        );
    }
    // flow: mean-only residual couplings at even indices (odd ones are parameter-free Flips).
    let half = d.inter_channels / 2;
    for c in 0..d.flow_n_couplings {
        let p = format!("flow.flows.{}", 2 * c);
        conv(&mut r, format!("{p}.pre"), h, half, 1, true);
        for i in 0..d.flow_wn_layers {
            conv(
                &mut r,
                format!("{p}.enc.in_layers.{i}"),
                2 * h,
                h,
                d.flow_kernel_size,
                true,
            );
            // The last WaveNet layer only produces the skip half.
            let out = if i + 1 < d.flow_wn_layers { 2 * h } else { h };
            conv(
                &mut r,
                format!("{p}.enc.res_skip_layers.{i}"),
                out,
                h,
                1,
                true,
            );
        }
        conv(&mut r, format!("{p}.post"), half, h, 1, true);
    }
    // dec: HiFi-GAN generator.
    let u = d.upsample_initial_channel;
    conv(
        &mut r,
        "dec.conv_pre".into(),
        u,
        d.inter_channels,
        d.dec_pre_kernel_size,
        true,
    );
    let nk = d.resblock_kernel_sizes.len();
    let mut ch = u;
    for (i, &k) in d.upsample_kernel_sizes.iter().enumerate() {
        let next = ch / 2;
        r.push((format!("dec.ups.{i}.weight"), vec![ch, next, k]));
        r.push((format!("dec.ups.{i}.bias"), vec![next]));
        for (j, (&rk, dil)) in d
            .resblock_kernel_sizes
            .iter()
            .zip(&d.resblock_dilation_sizes)
            .enumerate()
        {
            for c in 0..dil.len() {
                conv(
                    &mut r,
                    format!("dec.resblocks.{}.convs.{c}", i * nk + j),
                    next,
                    next,
                    rk,
                    true,
                );
            }
        }
        ch = next;
    }
    conv(
        &mut r,
        "dec.conv_post".into(),
        1,
        ch,
        d.dec_post_kernel_size,
        false,
    );
    // Speakers: g = emb_g[sid] [gin], and a 1×1 conv of it at each of the three places VITS
    // conditions on it.
    let gin = d.gin_channels;
    if gin > 0 {
        r.push(("emb_g.weight".into(), vec![d.n_speakers, gin]));
        conv(&mut r, "dp.cond".into(), fd, gin, 1, true);
        for c in 0..d.flow_n_couplings {
            let p = format!("flow.flows.{}.enc.cond_layer", 2 * c);
            conv(&mut r, p, 2 * h * d.flow_wn_layers, gin, 1, true);
        }
        conv(&mut r, "dec.cond".into(), u, gin, 1, true);
    }
    r
}

/// Checks the weights that `shape_of` finds against `required_weights`: an error lists every
/// missing weight and every shape mismatch. Dimensions out of bounds are an error too.
pub fn check_shapes<'a>(
    d: &ModelDims,
    shape_of: impl Fn(&str) -> Option<&'a [usize]>,
) -> Result<(), String> {
    d.check_bounds()?;
    let req = required_weights(d);
    // Missing weights first: they are the likelier cause of shape mismatches elsewhere.
    let mut problems: Vec<String> = req
        .iter()
        .filter(|(name, _)| shape_of(name).is_none())
        .map(|(name, _)| format!("missing `{name}`"))
        .collect();
    for (name, want) in &req {
        if let Some(got) = shape_of(name).filter(|got| got != want) {
            problems.push(format!("`{name}` has shape {got:?}, expected {want:?}"));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let n = problems.len();
    problems.truncate(8);
    let more = if n > 8 {
        format!(" (and {} more)", n - 8)
    } else {
        String::new()
    };
    Err(format!("{}{more}", problems.join("; ")))
}

/// Checks `w` against `required_weights`: returns the extra names (kept, but unknown to Hark)
/// or an error listing every missing weight and every shape mismatch.
pub fn check_weights(w: &W, d: &ModelDims) -> Result<Vec<String>, String> {
    check_shapes(d, |name| w.get(name).map(|t| &t.shape[..]))?;
    let req = required_weights(d);
    let known: std::collections::HashSet<&str> = req.iter().map(|(n, _)| n.as_str()).collect();
    Ok(w.keys()
        .filter(|k| !known.contains(k.as_str()))
        .cloned()
        .collect())
}
