//! The captured CUDA graphs, least recently used out first once [`GraphCache::cap`] are held.
//!
//! Why a cap: each instantiated graph holds host and device memory in the driver. The keys
//! (window, offset, samples, slot) come from a bounded set of step sizes, but the set is the
//! engine's choice, not this cache's; a cap keeps the memory bounded whatever the engine asks,
//! and a miss only costs one capture (a few milliseconds).

use std::collections::HashMap;
use std::hash::Hash;

/// Graphs held by default (`HARK_CUDA_GRAPH_CACHE`): well above the shapes one voice meets
/// (steps of 16–128 frames, two slots, a few start offsets). Graphs are not what grows in the
/// soak: with none at all, RSS grows as much (docs/RELIABILITY.md, the H200 arms of 9679196).
pub const DEFAULT_CAP: usize = 64;

pub struct GraphCache<K, V> {
    entries: HashMap<K, (V, u64)>,
    cap: usize,
    tick: u64,
}

impl<K: Hash + Eq + Copy, V> GraphCache<K, V> {
    /// A cache of at most `cap` entries (at least one).
    pub fn new(cap: usize) -> Self {
        Self {
            entries: HashMap::new(),
            cap: cap.max(1),
            tick: 0,
        }
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn contains(&self, key: &K) -> bool {
        self.entries.contains_key(key)
    }

    /// The entry, marked as just used.
    pub fn get(&mut self, key: &K) -> Option<&V> {
        self.tick += 1;
        let tick = self.tick;
        self.entries.get_mut(key).map(|(v, used)| {
            *used = tick;
            &*v
        })
    }

    /// Adds an entry, first dropping the least recently used one when full; says whether it
    /// dropped one.
    pub fn insert(&mut self, key: K, value: V) -> bool {
        let mut evicted = false;
        if !self.entries.contains_key(&key) && self.entries.len() >= self.cap {
            // A linear scan: at most `cap` (tens of) entries, once per capture.
            if let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| *k)
            {
                evicted = self.entries.remove(&oldest).is_some();
            }
        }
        self.tick += 1;
        self.entries.insert(key, (value, self.tick));
        evicted
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::GraphCache;
    use std::rc::Rc;

    #[test]
    fn a_full_cache_drops_the_least_recently_used_entry() {
        let mut c = GraphCache::new(2);
        assert!(!c.insert(1, "a"));
        assert!(!c.insert(2, "b"));
        assert_eq!(c.get(&1), Some(&"a"));
        assert!(c.insert(3, "c"));
        assert!(c.contains(&1) && c.contains(&3) && !c.contains(&2));
        assert_eq!(c.len(), 2);
        // Replacing a key that is held drops nothing else.
        assert!(!c.insert(3, "c2"));
        assert_eq!(c.len(), 2);
        assert_eq!(c.get(&3), Some(&"c2"));
    }

    #[test]
    fn the_cache_never_holds_more_than_its_cap_and_drops_what_it_evicts() {
        let held = Rc::new(());
        let mut c = GraphCache::new(8);
        let mut evictions = 0;
        for k in 0..1_000 {
            evictions += usize::from(c.insert(k, Rc::clone(&held)));
            assert!(c.len() <= 8);
        }
        // Evicted values are dropped, not kept somewhere: 8 in the cache plus `held`.
        assert_eq!(Rc::strong_count(&held), 9);
        assert_eq!(evictions, 992);
        c.clear();
        assert_eq!(Rc::strong_count(&held), 1);
        assert_eq!(GraphCache::<u8, ()>::new(0).cap(), 1);
    }
}
