//! What one extension offers another, by type. Extensions never depend on each other: a
//! contract lives here, the extension that implements it registers it
//! ([`crate::Extension::provide`]), and the one that uses it asks the session for it
//! ([`crate::SessionApi::service`]) and copes when nobody offers it.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

// The contracts extensions offer each other.
pub use crate::objective::{Objective, StartObjective};

/// The services of a runtime, one per type (a trait object type, usually).
#[derive(Default)]
pub struct Services(HashMap<TypeId, Box<dyn Any + Send + Sync>>);

impl Services {
    /// Offers `service` as the `S` of this runtime (a later offer replaces an earlier one).
    pub fn offer<S: ?Sized + Send + Sync + 'static>(&mut self, service: Arc<S>) {
        self.0.insert(TypeId::of::<S>(), Box::new(service));
    }

    /// The `S` offered, if any.
    pub fn get<S: ?Sized + 'static>(&self) -> Option<Arc<S>> {
        self.0
            .get(&TypeId::of::<S>())
            .and_then(|b| b.downcast_ref::<Arc<S>>())
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    trait Greet: Send + Sync {
        fn hi(&self) -> &'static str;
    }
    struct En;
    impl Greet for En {
        fn hi(&self) -> &'static str {
            "hello"
        }
    }

    #[test]
    fn a_service_is_found_by_its_type_and_a_missing_one_is_none() {
        let mut s = Services::default();
        assert!(s.get::<dyn Greet>().is_none());
        s.offer::<dyn Greet>(Arc::new(En));
        assert_eq!(s.get::<dyn Greet>().map(|g| g.hi()), Some("hello"));
        assert!(s.get::<dyn StartObjective>().is_none());
    }
}
