//! Operators: people with argon2id passwords.

use argon2::Argon2;
use argon2::password_hash::PasswordVerifier;
use argon2::password_hash::phc::PasswordHash;

use super::hashing::{HASHING, dummy_hash, hash_password};
use super::{Auth, check_name, store};
use crate::error::{Error, Result};

const MIN_PASSWORD: usize = 8;

fn check_new_operator(name: &str, password: &str) -> Result<()> {
    check_name(name)?;
    if password.chars().count() < MIN_PASSWORD {
        return Err(Error::invalid(format!("a password needs at least {MIN_PASSWORD} characters")));
    }
    Ok(())
}

impl Auth {
    /// Adds an operator with an argon2id hash of `password`.
    pub async fn add_operator(&self, name: &str, password: &str) -> Result<()> {
        check_new_operator(name, password)?;
        let hash = hash_password(password).await?;
        store::insert_operator(&self.db, name, &hash).await
    }

    /// Adds the first operator, only while there is none. "None yet" and the insert are one
    /// statement, so of several setups racing exactly one creates an operator; the others
    /// get `Conflict`.
    pub async fn add_first_operator(&self, name: &str, password: &str) -> Result<()> {
        check_new_operator(name, password)?;
        let hash = hash_password(password).await?;
        if !store::insert_first_operator(&self.db, name, &hash).await? {
            return Err(Error::conflict(
                "the first operator has been created already; sign in, or add operators with `kennel operator add`",
            ));
        }
        Ok(())
    }

    /// Whether `name` / `password` is a valid operator sign-in. An unknown name costs the
    /// same hashing work as a wrong password, so the two cannot be told apart by timing.
    pub async fn verify_operator(&self, name: &str, password: &str) -> Result<bool> {
        let stored = store::password_hash(&self.db, name).await?;
        let known = stored.is_some();
        let hash = match stored {
            Some(h) => h,
            None => dummy_hash().await?,
        };
        let password = password.to_string();
        let ok = HASHING
            .run(move || {
                PasswordHash::new(&hash)
                    .map(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
                    .unwrap_or(false)
            })
            .await?;
        Ok(known && ok)
    }

    pub async fn operator_count(&self) -> Result<i64> {
        store::operator_count(&self.db).await
    }
}
