//! A minimal dense f32 tensor, row-major, batch 1. Activations are channels-first `[C, T]`.

#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

impl Tensor {
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Self {
        assert_eq!(
            shape.iter().product::<usize>(),
            data.len(),
            "tensor shape {shape:?} does not match {} values",
            data.len()
        );
        Self { shape, data }
    }

    pub fn zeros(shape: Vec<usize>) -> Self {
        let n = shape.iter().product();
        Self {
            shape,
            data: vec![0.0; n],
        }
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Size of dimension `i`.
    pub fn dim(&self, i: usize) -> usize {
        self.shape[i]
    }

    /// Row `r` of a 2-D tensor.
    pub fn row(&self, r: usize) -> &[f32] {
        let cols = self.shape[1];
        &self.data[r * cols..(r + 1) * cols]
    }

    pub fn row_mut(&mut self, r: usize) -> &mut [f32] {
        let cols = self.shape[1];
        &mut self.data[r * cols..(r + 1) * cols]
    }

    /// Columns `range` of a 2-D tensor, as a new tensor.
    pub fn cols(&self, range: std::ops::Range<usize>) -> Tensor {
        let rows = self.shape[0];
        let mut data = Vec::with_capacity(rows * range.len());
        for r in 0..rows {
            data.extend_from_slice(&self.row(r)[range.clone()]);
        }
        Tensor::new(vec![rows, range.len()], data)
    }
}

/// Relative L2 error ‖a − b‖ / ‖b‖, the parity measure used against the oracle.
pub fn rel_l2(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len(), "rel_l2 on different lengths");
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let d = x as f64 - y as f64;
        num += d * d;
        den += (y as f64) * (y as f64);
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
}
