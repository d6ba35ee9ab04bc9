//! The family contract: how a family of built-in tools joins the kernel.
//!
//! A family is one folder. It exports one [`Family`]: how it opens its services from those
//! opened before it ([`Family::open`]) and how it registers its tools ([`Family::register`]),
//! each tool holding the services it takes from [`Services`] — so what a family depends on is
//! written in its `open` and its tools' fields, and a tool reaches nothing else.
//! `lib.rs` lists the families once (`families!`): that list is the order they open in and
//! the order their tools are listed in. The kernel keeps their services in one [`Services`]
//! map by type; fronts read one with [`crate::Kernel::service`].

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::Config;
use crate::error::Result;
use crate::tool::Registry;

/// One family's part in the kernel.
pub struct Family {
    /// The folder's name, for messages.
    pub name: &'static str,
    /// Builds the family's services from the core and the families opened before it, and
    /// provides them.
    pub open: fn(&mut Services) -> Result<()>,
    /// Registers the family's tools, each taking the services it needs.
    pub register: fn(&mut Registry, &Services),
}

impl Family {
    /// A family that has tools but no service of its own.
    pub const fn tools_only(name: &'static str, register: fn(&mut Registry, &Services)) -> Family {
        Family { name, open: |_| Ok(()), register }
    }
}

/// `$KENNEL_HOME`, as a service.
#[derive(Debug, Clone)]
pub struct Home(pub PathBuf);

impl Home {
    pub fn path(&self) -> &Path {
        &self.0
    }
}

/// Every service the kernel opened, one per type: the core's (config, database, clock,
/// home, agents) and each family's.
#[derive(Default)]
pub struct Services {
    by_type: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl Services {
    /// Adds a service. Each type is provided once: a second is a bug in a family's `open`.
    pub fn provide<T: Any + Send + Sync>(&mut self, service: T) -> Arc<T> {
        let service = Arc::new(service);
        self.provide_shared(service.clone());
        service
    }

    /// Adds a service already shared elsewhere.
    pub fn provide_shared<T: Any + Send + Sync>(&mut self, service: Arc<T>) {
        let earlier = self.by_type.insert(TypeId::of::<T>(), service);
        assert!(earlier.is_none(), "{} was provided twice", type_name::<T>());
    }

    /// The service of type `T`, shared.
    ///
    /// # Panics
    /// When no family provides `T`, or it opens after the family asking: an error in the
    /// order of `families!`, which every opening of a kernel (every test) would hit.
    pub fn need<T: Any + Send + Sync>(&self) -> Arc<T> {
        self.shared::<T>().unwrap_or_else(|| panic!("{} is not provided (yet)", type_name::<T>()))
    }

    /// The service of type `T`, when it is switched on (the browser without `[browser]` is not).
    pub fn shared<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let service = self.by_type.get(&TypeId::of::<T>())?.clone();
        Some(service.downcast::<T>().expect("stored under its own type"))
    }

    /// The service of type `T`, borrowed. Panics as [`Services::need`] does.
    pub fn get<T: Any + Send + Sync>(&self) -> &T {
        self.optional::<T>().unwrap_or_else(|| panic!("{} is not provided (yet)", type_name::<T>()))
    }

    /// The service of type `T`, borrowed, when it is switched on.
    pub fn optional<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.by_type.get(&TypeId::of::<T>()).map(|s| s.downcast_ref::<T>().expect("stored under its own type"))
    }

    /// The config every family reads its section from.
    pub fn config(&self) -> &Config {
        self.get::<Config>()
    }
}

/// Opens every family in order, then registers their tools in the same order.
pub(crate) fn open_all(families: &[Family], services: &mut Services) -> Result<Registry> {
    for family in families {
        (family.open)(services)?;
    }
    let mut registry = Registry::default();
    for family in families {
        (family.register)(&mut registry, services);
    }
    Ok(registry)
}

/// The built-in tools as a kernel opened on `config` registers them (for tests of the
/// registry that need no running kernel).
#[cfg(test)]
pub(crate) async fn builtin_registry(config: Config) -> Registry {
    let home = tempfile::tempdir().expect("a temporary home");
    let kernel = crate::Kernel::open_with(home.path(), config).await.expect("a kernel opens");
    let registry = (*kernel.tools()).clone();
    kernel.close().await;
    registry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_is_found_by_its_type_and_a_missing_one_is_none() {
        let mut services = Services::default();
        services.provide(Home(PathBuf::from("/h")));
        assert_eq!(services.get::<Home>().path(), Path::new("/h"));
        assert!(services.optional::<Config>().is_none());
        assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| services.need::<Config>())).is_err());
    }

    #[test]
    #[should_panic(expected = "provided twice")]
    fn a_type_is_provided_once() {
        let mut services = Services::default();
        services.provide(Home(PathBuf::from("/a")));
        services.provide(Home(PathBuf::from("/b")));
    }
}
