//! A fixed-capacity cache that evicts the least recently used entry.

use std::collections::HashMap;
use std::hash::Hash;

/// Entries live in a Vec; `order` keeps keys from least to most recently used.
pub struct LruCache<K, V> {
    capacity: usize,
    map: HashMap<K, V>,
    order: Vec<K>,
}

impl<K: Clone + Eq + Hash, V> LruCache<K, V> {
    /// A cache that holds at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        LruCache { capacity: capacity.max(1), map: HashMap::new(), order: Vec::new() }
    }

    fn touch(&mut self, key: &K) {
        if let Some(pos) = self.order.iter().position(|k| k == key) {
            let k = self.order.remove(pos);
            self.order.push(k);
        }
    }

    /// The value for `key`, marking it most recently used.
    pub fn get(&mut self, key: &K) -> Option<&V> {
        if self.map.contains_key(key) {
            self.touch(key);
        }
        self.map.get(key)
    }

    /// Insert or replace; when full, the least recently used entry is evicted first.
    pub fn put(&mut self, key: K, value: V) -> Option<(K, V)> {
        let mut evicted = None;
        if self.map.contains_key(&key) {
            self.touch(&key);
        } else {
            if self.map.len() == self.capacity {
                let oldest = self.order.remove(0);
                let old_value = self.map.remove(&oldest).expect("order and map agree");
                evicted = Some((oldest, old_value));
            }
            self.order.push(key.clone());
        }
        self.map.insert(key, value);
        evicted
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }
}
