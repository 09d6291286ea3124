//! Speaker conditioning of a multi-speaker voice (Piper's `sid` input).
//!
//! VITS looks the speaker up once, `g = emb_g[sid]` (`[gin]`, one column in time), and adds a
//! 1×1 conv of it at three places: the stochastic duration predictor adds `dp.cond(g)` to the
//! output of `dp.pre` (before its DDSConv), each flow coupling's WaveNet adds layer i's slice
//! `[2H·i, 2H·(i+1))` of `enc.cond_layer(g)` to that layer's `in_layers.i` output (inside the
//! tanh/sigmoid gate), and HiFi-GAN adds `dec.cond(g)` to the output of `conv_pre`. The text
//! encoder takes no `g`.
//!
//! Since `g` is the same at every frame, each of those additions is a constant per channel:
//! exactly a bias added to the conv before it. So the speaker is applied here, once per
//! backend, by adding `cond(g)` to `dp.pre.bias`, each `in_layers.i.bias` and
//! `dec.conv_pre.bias`; every stage function then runs a conditioned voice unchanged, and a
//! single-speaker voice's weights are passed through untouched (bit for bit the same model).

use super::{ModelError, Result};
use hark_voice::tensor::Tensor;
use hark_voice::{ModelDims, Weights};

/// The weights that speak as speaker `speaker`: `w` itself for a single-speaker voice (only
/// speaker 0), else `w` with the speaker's conditioning folded into the three biases.
pub fn speaker_weights(w: &Weights, d: &ModelDims, speaker: usize) -> Result<Weights> {
    let gin = d.gin_channels;
    if gin == 0 {
        return if speaker == 0 {
            Ok(w.clone())
        } else {
            Err(ModelError::Input(format!(
                "speaker {speaker} asked of a single-speaker voice"
            )))
        };
    }
    if speaker >= d.n_speakers {
        return Err(ModelError::Input(format!(
            "speaker {speaker} is not one of the voice's {} speakers",
            d.n_speakers
        )));
    }
    let emb = w.get_shaped("emb_g.weight", &[d.n_speakers, gin])?;
    let g = &emb.data[speaker * gin..(speaker + 1) * gin];
    // cond(g) of the 1×1 conv `name`: bias + weight · g, one value per output channel.
    let cond = |name: &str, cout: usize| -> Result<Vec<f32>> {
        let wt = w.get_shaped(&format!("{name}.weight"), &[cout, gin, 1])?;
        let b = w.get_shaped(&format!("{name}.bias"), &[cout])?;
        Ok(wt
            .data
            .chunks_exact(gin)
            .zip(&b.data)
            .map(|(row, &b)| {
                let dot: f64 = row.iter().zip(g).map(|(&a, &x)| a as f64 * x as f64).sum();
                (dot + b as f64) as f32
            })
            .collect())
    };
    // `bias + add`, as a new tensor named `name`.
    let plus = |name: String, add: &[f32]| -> Result<(String, Tensor)> {
        let b = w.get_shaped(&name, &[add.len()])?;
        let data = b.data.iter().zip(add).map(|(b, a)| b + a).collect();
        Ok((name, Tensor::new(vec![add.len()], data)))
    };
    let mut new = Vec::new();
    new.push(plus(
        "dp.pre.bias".into(),
        &cond("dp.cond", d.dp_filter_channels)?,
    )?);
    let h2 = 2 * d.hidden_channels;
    for c in 0..d.flow_n_couplings {
        let p = format!("flow.flows.{}.enc", 2 * c);
        let all = cond(&format!("{p}.cond_layer"), h2 * d.flow_wn_layers)?;
        for (i, slice) in all.chunks_exact(h2).enumerate() {
            new.push(plus(format!("{p}.in_layers.{i}.bias"), slice)?);
        }
    }
    new.push(plus(
        "dec.conv_pre.bias".into(),
        &cond("dec.cond", d.upsample_initial_channel)?,
    )?);
    Ok(w.with_replaced(new))
}

#[cfg(test)]
mod tests {
    use super::super::decoder::decode;
    use super::super::flow::flow_reverse;
    use super::super::ops::conv1d;
    use super::super::testutil::{random_tensor, random_weights, tiny_dims};
    use super::*;
    use hark_voice::tensor::rel_l2;

    /// Tiny dims with 3 speakers, and random weights with the speaker tensors added.
    fn speaker_model(seed: u64) -> (ModelDims, Weights) {
        let mut d = tiny_dims();
        d.gin_channels = 5;
        d.n_speakers = 3;
        let base = random_weights(&d, seed);
        let mut next = seed * 100;
        let mut t = |shape: &[usize]| {
            next += 1;
            random_tensor(next, shape, 0.5)
        };
        let h2 = 2 * d.hidden_channels * d.flow_wn_layers;
        let mut extra = vec![
            ("emb_g.weight".to_string(), t(&[3, 5])),
            ("dp.pre.bias".into(), t(&[d.dp_filter_channels])),
            ("dp.cond.weight".into(), t(&[d.dp_filter_channels, 5, 1])),
            ("dp.cond.bias".into(), t(&[d.dp_filter_channels])),
            (
                "dec.cond.weight".into(),
                t(&[d.upsample_initial_channel, 5, 1]),
            ),
            ("dec.cond.bias".into(), t(&[d.upsample_initial_channel])),
        ];
        for c in 0..d.flow_n_couplings {
            let p = format!("flow.flows.{}.enc.cond_layer", 2 * c);
            extra.push((format!("{p}.weight"), t(&[h2, 5, 1])));
            extra.push((format!("{p}.bias"), t(&[h2])));
        }
        (d, base.with_replaced(extra))
    }

    #[test]
    fn single_speaker_weights_are_untouched() {
        let d = tiny_dims();
        let w = random_weights(&d, 3);
        let s = speaker_weights(&w, &d, 0).unwrap();
        for (name, t) in w.iter() {
            assert_eq!(s.get(name).unwrap().data, t.data, "{name}");
        }
        assert!(speaker_weights(&w, &d, 1).is_err());
    }

    #[test]
    fn folded_bias_is_the_cond_conv_of_the_embedding() {
        let (d, w) = speaker_model(7);
        let s = speaker_weights(&w, &d, 2).unwrap();
        // dec.cond(g) by the generic conv, as the graph computes it.
        let g = Tensor::new(
            vec![5, 1],
            w.get("emb_g.weight").unwrap().data[10..15].to_vec(),
        );
        let cond = conv1d(
            &g,
            w.get("dec.cond.weight").unwrap(),
            Some(w.get("dec.cond.bias").unwrap()),
            0,
            1,
        );
        let want: Vec<f32> = w
            .get("dec.conv_pre.bias")
            .unwrap()
            .data
            .iter()
            .zip(&cond.data)
            .map(|(a, b)| a + b)
            .collect();
        assert!(rel_l2(&s.get("dec.conv_pre.bias").unwrap().data, &want) < 1e-6);
        // Layer 1 of coupling 1 takes the second slice of its cond_layer.
        let h2 = 2 * d.hidden_channels;
        let cl = conv1d(
            &g,
            w.get("flow.flows.2.enc.cond_layer.weight").unwrap(),
            Some(w.get("flow.flows.2.enc.cond_layer.bias").unwrap()),
            0,
            1,
        );
        let base = &w.get("flow.flows.2.enc.in_layers.1.bias").unwrap().data;
        let want: Vec<f32> = base
            .iter()
            .zip(&cl.data[h2..2 * h2])
            .map(|(a, b)| a + b)
            .collect();
        let got = &s.get("flow.flows.2.enc.in_layers.1.bias").unwrap().data;
        assert!(rel_l2(got, &want) < 1e-6);
        // The other weights are shared, not changed.
        assert_eq!(
            s.get("flow.flows.2.enc.in_layers.1.weight").unwrap().data,
            w.get("flow.flows.2.enc.in_layers.1.weight").unwrap().data
        );
        assert!(speaker_weights(&w, &d, 3).is_err());
    }

    #[test]
    fn speakers_change_the_flow_and_the_decoder() {
        let (d, w) = speaker_model(9);
        let z_p = random_tensor(4, &[d.inter_channels, 12], 1.0);
        let audio = |sid| {
            let s = speaker_weights(&w, &d, sid).unwrap();
            decode(&s, &d, &flow_reverse(&s, &d, &z_p).unwrap()).unwrap()
        };
        let (a0, a1) = (audio(0), audio(1));
        assert_eq!(a0.len(), a1.len());
        assert!(rel_l2(&a0, &a1) > 1e-2, "speakers 0 and 1 sound the same");
        assert_eq!(audio(0), a0, "a speaker is deterministic");
    }
}
