//! Host hooks for the GPU parity tests (feature `test-hooks`, which only the tests turn on):
//! set one stage's inputs, run it alone, read its outputs back; and the convolution-core
//! probes. Nothing in the engine calls these, and release builds of the binaries leave them
//! out.

use super::GpuError;
use super::device::Arg;
use super::model::{GpuModel, p};
use super::registry::Entry;

/// Front-half results copied to the host.
pub struct FrontHost {
    pub x: Vec<f32>,
    pub m_p: Vec<f32>,
    pub logs_p: Vec<f32>,
    pub logw: Vec<f32>,
    pub off: Vec<i32>,
}

impl GpuModel {
    /// Duration predictor on the encoder output, waiting for its durations.
    pub fn run_sdp(&mut self, noise: &[f32], length_scale: f32) -> Result<Vec<usize>, GpuError> {
        self.launch_sdp(noise, length_scale)?;
        Ok(self.finish_sdp(noise.len() / 2)?.0)
    }

    /// Host copies of front-half results for `t` tokens.
    pub fn read_front(&self, t: usize) -> Result<FrontHost, GpuError> {
        let d = &self.dims;
        let (e, u) = (&self.front.enc, &self.front.dur);
        let g = &self.gpu;
        Ok(FrontHost {
            x: g.dtoh_sync(p(&e.x), d.hidden_channels * t)?,
            m_p: g.dtoh_sync(p(&e.m_p), d.inter_channels * t)?,
            logs_p: g.dtoh_sync(p(&e.logs_p), d.inter_channels * t)?,
            logw: g.dtoh_sync(p(&u.logw), t)?,
            off: g.dtoh_sync(p(&u.off), t + 1)?,
        })
    }

    /// Uploads the encoder output x [H, T] directly (the duration predictor alone).
    pub fn set_encoder_output(&mut self, x: &[f32], t: usize) -> Result<(), GpuError> {
        self.ensure_front(t)?;
        self.gpu.htod_async(p(&self.front.enc.x), x)?;
        self.gpu.sync()
    }

    /// Uploads m_p / logs_p [C, T] and frame offsets directly (the flow from the prior).
    pub fn set_prior(
        &mut self,
        m_p: &[f32],
        logs_p: &[f32],
        durations: &[usize],
    ) -> Result<(), GpuError> {
        let t = durations.len();
        self.ensure_front(t)?;
        let mut off = Vec::with_capacity(t + 1);
        let mut acc = 0i32;
        for &d in durations {
            off.push(acc);
            acc += d as i32;
        }
        off.push(acc);
        let f = &self.front;
        self.gpu.htod_async(p(&f.enc.m_p), m_p)?;
        self.gpu.htod_async(p(&f.enc.logs_p), logs_p)?;
        self.gpu.htod_async(p(&f.dur.off), &off)?;
        self.gpu.sync()
    }

    /// Reverse flow of z_p [C, n] given on the host → z [C, n].
    pub fn flow_host(&mut self, z_p: &[f32], n: usize) -> Result<Vec<f32>, GpuError> {
        self.ensure_window(n)?;
        self.gpu.htod_async(p(&self.win.flow.z), z_p)?;
        self.launch_flow(0, n, false)?;
        self.gpu
            .dtoh_sync(p(&self.win.flow.z), self.dims.inter_channels * n)
    }

    /// Decoder on z [C, n] given on the host → n · hop samples.
    pub fn decode_host(&mut self, z: &[f32], n: usize) -> Result<Vec<f32>, GpuError> {
        self.ensure_window(n)?;
        self.gpu.htod_async(p(&self.win.flow.z), z)?;
        let count = n * self.dims.samples_per_frame();
        self.launch_decoder(n, 0, count, 0)?;
        self.gpu.dtoh_sync(p(&self.win.dec.out[0]), count)
    }

    /// The convolution core alone (`conv_probe`, or `flow_conv_probe` with `flow`): y [rows, l]
    /// = b + w ⊛ act(x) with x [cin, l], w [rows, cin, k] (stored f16 in the f16 mode),
    /// dilation `dil`, "same" zero padding, act = LeakyReLU(slope) unless slope is 1, `tc`
    /// output columns per block.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_host(
        &mut self,
        flow: bool,
        x: &[f32],
        cin: usize,
        w: &[f32],
        b: &[f32],
        k: usize,
        dil: usize,
        slope: f32,
        tc: usize,
    ) -> Result<Vec<f32>, GpuError> {
        let entry = if flow {
            Entry::FlowConvProbe
        } else {
            Entry::ConvProbe
        };
        let probe = self.modules.kernel(&self.gpu, entry)?;
        let l = x.len() / cin;
        let rows = b.len();
        let smem = cin * (tc + dil * (k - 1)) * 4;
        if w.len() != rows * cin * k || x.len() != cin * l || smem > probe.smem as usize || tc == 0
        {
            return Err(GpuError::Driver("conv_host: bad shapes".into()));
        }
        let g = &self.gpu;
        let wd = if self.f16 {
            let h: Vec<u16> = w
                .iter()
                .map(|&v| half::f16::from_f32(v).to_bits())
                .collect();
            g.upload(&h)?
        } else {
            g.upload(w)?
        };
        let (xd, bd, yd) = (g.upload(x)?, g.upload(b)?, g.alloc(rows * l * 4)?);
        let dims = probe.grid(l.div_ceil(tc), 1).with_smem(smem as u32);
        g.launch(
            &probe,
            dims,
            &[
                Arg::P(xd.ptr),
                Arg::I(l as i32),
                Arg::I(cin as i32),
                Arg::P(wd.ptr),
                Arg::P(bd.ptr),
                Arg::I(k as i32),
                Arg::I(dil as i32),
                Arg::F(slope),
                Arg::P(yd.ptr),
                Arg::I(rows as i32),
                Arg::I(tc as i32),
            ],
        )?;
        g.dtoh_sync(yd.ptr, rows * l)
    }
}
