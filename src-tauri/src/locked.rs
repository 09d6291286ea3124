//! The app's one way to take a lock: the managers hold plain state with no invariant across
//! a panic, so a lock poisoned by a panicking holder is still used, not a second panic.

use std::sync::{Mutex, MutexGuard};

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
