//! The one way argon2 runs: a bounded gate, so a sign-in flood cannot take the memory.

use std::sync::atomic::{AtomicUsize, Ordering};

use argon2::Argon2;
use argon2::password_hash::PasswordHasher;
use rand::RngExt;
use tokio::sync::Semaphore;

use crate::error::{Error, Result};

/// Argon2 runs at once in this process. Each holds about 19 MiB (argon2id's default memory
/// cost) for tens of milliseconds, so this bounds the daemon's memory under a sign-in flood.
pub const HASHING_SLOTS: usize = 2;
/// Password checks that may wait for a slot; beyond that they are refused as busy (429), so a flood
/// from many addresses cannot queue without end either.
pub const HASHING_QUEUE: usize = 64;
pub(super) static HASHING: HashingGate = HashingGate::new(HASHING_SLOTS, HASHING_QUEUE);

/// An argon2id hash (default parameters) of `password`.
pub(super) async fn hash_password(password: &str) -> Result<String> {
    let password = password.to_string();
    HASHING
        .run(move || Argon2::default().hash_password(password.as_bytes()).map(|h| h.to_string()))
        .await?
        .map_err(|e| Error::internal(format_args!("hashing failed: {e}")))
}

/// An argon2id hash (default parameters) of a random password, checked against when the
/// operator is unknown so that case costs the same work as a wrong password.
pub(super) async fn dummy_hash() -> Result<String> {
    static DUMMY: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    DUMMY
        .get_or_try_init(|| async {
            let password = hex::encode(rand::rng().random::<[u8; 16]>());
            hash_password(&password).await
        })
        .await
        .cloned()
}

/// The one way argon2 runs: at most `slots` at once on the blocking pool, at most `queue`
/// more waiting, and anything beyond refused as busy.
pub(super) struct HashingGate {
    pub(super) slots: Semaphore,
    /// Runs admitted: waiting for a slot or holding one.
    admitted: AtomicUsize,
    capacity: usize,
}

impl HashingGate {
    pub(super) const fn new(slots: usize, queue: usize) -> HashingGate {
        HashingGate { slots: Semaphore::const_new(slots), admitted: AtomicUsize::new(0), capacity: slots + queue }
    }

    pub(super) async fn run<T: Send + 'static>(&'static self, work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
        let admitted = self.admit()?;
        let slot = self.slots.acquire().await.map_err(|_| Error::internal("password hashing has stopped"))?;
        // The slot goes with the work: should the caller stop waiting (a client that hung
        // up), the slot stays taken until the hashing has really finished.
        tokio::task::spawn_blocking(move || {
            let _held = (admitted, slot);
            work()
        })
        .await
        .map_err(|e| Error::internal(format_args!("password hashing failed: {e}")))
    }

    fn admit(&'static self) -> Result<Admitted> {
        self.admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.capacity).then_some(n + 1))
            .map_err(|_| {
                Error::new(
                    crate::ErrorKind::ResourceExhausted,
                    "the server is busy checking other passwords; try again in a few seconds",
                )
            })?;
        Ok(Admitted(&self.admitted))
    }
}

/// One admitted run; leaving makes room.
struct Admitted(&'static AtomicUsize);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
