//! Which vector instructions the CPU kernels use: the best the CPU has, unless capped.
//!
//! The cap exists so that one machine can measure the paths other machines take (`hark bench
//! --isa avx2|scalar`): a laptop without AVX-512 runs the AVX2 kernels, an old or non-x86 CPU
//! the portable ones. Every dispatch in `cpu/` asks [`isa`]; the GEMM crate used by the
//! encoder's attention (`ops::matmul`) dispatches on its own and is not capped.

use std::sync::atomic::{AtomicU8, Ordering};

/// An instruction-set level of the CPU kernels, from the widest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    /// Plain Rust loops, vectorised by the compiler for the baseline target (SSE2 on x86-64).
    Scalar = 1,
    /// AVX2 with FMA (x86-64-v3).
    Avx2 = 2,
    /// AVX-512F (x86-64-v4).
    Avx512 = 3,
}

impl Isa {
    pub const ALL: [Isa; 3] = [Isa::Avx512, Isa::Avx2, Isa::Scalar];

    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    fn from_u8(v: u8) -> Self {
        match v {
            3 => Isa::Avx512,
            2 => Isa::Avx2,
            _ => Isa::Scalar,
        }
    }
}

/// The widest level this CPU supports.
pub fn detected() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Isa::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Isa::Avx2;
        }
    }
    Isa::Scalar
}

/// 0: not decided yet; else the level in use (`Isa as u8`).
static IN_USE: AtomicU8 = AtomicU8::new(0);

/// The level the kernels use now: [`detected`], or lower if [`cap`] said so.
#[inline]
pub fn isa() -> Isa {
    match IN_USE.load(Ordering::Relaxed) {
        0 => {
            let d = detected();
            // A racing `cap` wins: only an undecided slot is filled.
            let _ = IN_USE.compare_exchange(0, d as u8, Ordering::Relaxed, Ordering::Relaxed);
            Isa::from_u8(IN_USE.load(Ordering::Relaxed))
        }
        v => Isa::from_u8(v),
    }
}

/// Uses at most `level` from now on (never more than the CPU has); returns the level in use.
/// For benchmarks and tests: a computation running while it changes may mix levels, which
/// gives the same results to rounding.
pub fn cap(level: Isa) -> Isa {
    let used = level.min(detected());
    IN_USE.store(used as u8, Ordering::Relaxed);
    used
}

#[cfg(test)]
mod tests {
    use super::*;

    // `cap` itself is not called here: the level is process-wide, and the other tests of this
    // binary run beside this one.
    #[test]
    fn levels_are_ordered_and_round_trip() {
        assert!(Isa::Avx512 > Isa::Avx2 && Isa::Avx2 > Isa::Scalar);
        for l in Isa::ALL {
            assert_eq!(Isa::from_u8(l as u8), l);
            assert!(l.min(detected()) <= detected());
        }
        assert_eq!(isa(), detected(), "nothing in this binary caps the level");
    }
}
