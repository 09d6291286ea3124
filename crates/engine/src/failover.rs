//! When the backend's device fails mid-utterance (`BackendError::Device`): the engine thread
//! begins the sentence again, on the same backend once (a persistent CUDA kernel that hung has
//! already handed over to CUDA graphs inside it), else on the CPU for the rest of the session,
//! and goes on from the frame it had reached. The new backend may place the phonemes
//! differently (the GPU computes durations in its own precision), so the frame reached is
//! carried over phoneme by phoneme ([`carry_frame`]): nothing already played is said again,
//! and nothing not yet played is skipped.

/// Frame `frame` of an utterance with `old` durations (frames per id), in one with `new`
/// durations of the same ids: the same id, at the same fraction of it. Equal durations give
/// the same frame.
pub(crate) fn carry_frame(old: &[usize], new: &[usize], frame: usize) -> usize {
    let (mut old_at, mut new_at) = (0usize, 0usize);
    for (&o, &n) in old.iter().zip(new) {
        if frame < old_at + o {
            let into = frame - old_at;
            // Rounded to the nearest frame, within the id.
            return new_at + ((into * n + o / 2) / o).min(n);
        }
        old_at += o;
        new_at += n;
    }
    new_at
}

#[cfg(test)]
mod tests {
    use super::carry_frame;

    #[test]
    fn equal_durations_keep_the_frame() {
        let d = [3, 0, 5, 2];
        for f in 0..=10 {
            assert_eq!(carry_frame(&d, &d, f), f);
        }
    }

    #[test]
    fn the_frame_keeps_its_id_and_its_place_in_it() {
        let old = [4, 4, 4];
        let new = [2, 8, 4];
        assert_eq!(carry_frame(&old, &new, 0), 0);
        assert_eq!(carry_frame(&old, &new, 4), 2); // the start of id 1
        assert_eq!(carry_frame(&old, &new, 6), 6); // half way through id 1
        assert_eq!(carry_frame(&old, &new, 8), 10); // the start of id 2
        assert_eq!(carry_frame(&old, &new, 12), 14); // the end
        // Monotone: a later frame never maps before an earlier one.
        let m: Vec<usize> = (0..=12).map(|f| carry_frame(&old, &new, f)).collect();
        assert!(m.windows(2).all(|w| w[0] <= w[1]), "{m:?}");
    }
}
