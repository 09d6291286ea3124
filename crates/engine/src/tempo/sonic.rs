//! Hand-written FFI to the system's libsonic (Debian's `libsonic0`/`libsonic-dev` 0.2.0, the
//! library espeak-ng and NVDA speed speech up with): a stream that changes tempo and pitch
//! independently, fed and drained chunk by chunk.
//!
//! Sonic works on 16-bit samples inside (floats are converted on the way in and out), and
//! keeps back up to two pitch periods of the lowest pitch it looks for (2 × rate / 65 Hz:
//! 678 samples, 31 ms at 22.05 kHz) of input until more arrives or the stream is flushed.

use std::ffi::{c_float, c_int, c_void};

#[link(name = "sonic")]
unsafe extern "C" {
    fn sonicCreateStream(sample_rate: c_int, num_channels: c_int) -> *mut c_void;
    fn sonicDestroyStream(stream: *mut c_void);
    fn sonicWriteFloatToStream(stream: *mut c_void, samples: *const c_float, n: c_int) -> c_int;
    fn sonicReadFloatFromStream(stream: *mut c_void, samples: *mut c_float, max: c_int) -> c_int;
    fn sonicFlushStream(stream: *mut c_void) -> c_int;
    fn sonicSetSpeed(stream: *mut c_void, speed: c_float);
    fn sonicSetPitch(stream: *mut c_void, pitch: c_float);
}

/// Input handed to sonic per call: it reallocates its buffers to fit each write.
const WRITE_MAX: usize = 8192;

/// One mono sonic stream. Not `Sync`; moved between threads only whole.
pub(crate) struct Stream {
    raw: *mut c_void,
    buf: Vec<f32>,
}

// SAFETY: a sonic stream is plain heap memory owned by this value; it is only ever used
// through `&mut self`, on one thread at a time.
unsafe impl Send for Stream {}

impl Stream {
    /// A stream for mono audio at `rate`; `None` if sonic is out of memory.
    pub fn new(rate: u32) -> Option<Self> {
        // SAFETY: plain constructor; NULL is checked.
        let raw = unsafe { sonicCreateStream(rate as c_int, 1) };
        (!raw.is_null()).then(|| Self {
            raw,
            buf: vec![0.0; 4096],
        })
    }

    /// Tempo (> 1 is faster) and pitch (a frequency factor), from the next sample written.
    pub fn set(&mut self, speed: f32, pitch: f32) {
        // SAFETY: a live stream, used through `&mut self`.
        unsafe {
            sonicSetSpeed(self.raw, speed);
            sonicSetPitch(self.raw, pitch);
        }
    }

    /// Writes `input` (clamped to ±1: sonic converts to 16 bits without saturating) and
    /// appends what sonic has ready to `out`. False if sonic ran out of memory.
    pub fn write(&mut self, input: &[f32], out: &mut Vec<f32>) -> bool {
        let mut clamped = [0.0f32; 1024];
        for chunk in input.chunks(WRITE_MAX) {
            for piece in chunk.chunks(clamped.len()) {
                for (d, s) in clamped.iter_mut().zip(piece) {
                    *d = s.clamp(-1.0, 1.0);
                }
                // SAFETY: `clamped` holds `piece.len()` valid floats; a live stream.
                let ok = unsafe {
                    sonicWriteFloatToStream(self.raw, clamped.as_ptr(), piece.len() as c_int)
                };
                if ok == 0 {
                    return false;
                }
            }
            self.read(out);
        }
        true
    }

    /// Pushes out everything sonic holds (padding with silence, trimmed to the length the
    /// speed asks for) into `out`.
    pub fn flush(&mut self, out: &mut Vec<f32>) -> bool {
        // SAFETY: a live stream.
        let ok = unsafe { sonicFlushStream(self.raw) };
        self.read(out);
        ok != 0
    }

    fn read(&mut self, out: &mut Vec<f32>) {
        loop {
            let max = self.buf.len() as c_int;
            // SAFETY: `buf` has room for `max` floats; a live stream.
            let n = unsafe { sonicReadFloatFromStream(self.raw, self.buf.as_mut_ptr(), max) };
            if n <= 0 {
                return;
            }
            out.extend_from_slice(&self.buf[..n as usize]);
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: created by `sonicCreateStream`, destroyed once.
        unsafe { sonicDestroyStream(self.raw) };
    }
}
