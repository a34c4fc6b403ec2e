//! Symbols: unique identities with a display name.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A variable identity. Equality and hashing use the identity only, never the name: two
/// `Sym::new("i")` calls give two different variables.
#[derive(Clone)]
pub struct Sym {
    id: u64,
    name: Arc<str>,
}

impl Sym {
    /// A fresh symbol, distinct from every other symbol ever created in this process.
    pub fn new(name: impl AsRef<str>) -> Sym {
        Sym {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            name: Arc::from(name.as_ref()),
        }
    }

    /// A fresh symbol with the same name as `self`.
    pub fn fresh_copy(&self) -> Sym {
        Sym {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            name: self.name.clone(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn id(&self) -> u64 {
        self.id
    }
}

impl PartialEq for Sym {
    fn eq(&self, other: &Sym) -> bool {
        self.id == other.id
    }
}
impl Eq for Sym {}

impl Hash for Sym {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state)
    }
}

impl PartialOrd for Sym {
    fn partial_cmp(&self, other: &Sym) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Sym {
    fn cmp(&self, other: &Sym) -> std::cmp::Ordering {
        self.id.cmp(&other.id)
    }
}

impl fmt::Debug for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.name, self.id)
    }
}

impl fmt::Display for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}
