//! Operators: people with argon2id passwords.

use argon2::Argon2;
use argon2::password_hash::PasswordVerifier;
use argon2::password_hash::phc::PasswordHash;

use super::hashing::{HASHING, dummy_hash, hash_password};
use super::{Auth, check_name, store};
use crate::error::{Error, Result};

/// The shortest password an operator may have (the setup form states it before it is sent).
pub const MIN_PASSWORD: usize = 8;

fn check_new_operator(name: &str, password: &str) -> Result<()> {
    check_name(name)?;
    if password.chars().count() < MIN_PASSWORD {
        return Err(Error::invalid(format!("a password needs at least {MIN_PASSWORD} characters")));
    }
    Ok(())
}

/// An operator as `kennel operator list` shows one.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OperatorInfo {
    pub name: String,
    pub created_at: String,
    /// Dashboard sessions open now.
    pub sessions: i64,
}

fn no_such_operator(name: &str) -> Error {
    Error::not_found(format!("no operator named `{name}` (`kennel operator list` shows them)"))
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

    /// Every operator, by name, with how many dashboard sessions each has open.
    pub async fn list_operators(&self) -> Result<Vec<OperatorInfo>> {
        store::list_operators(&self.db).await
    }

    /// Removes an operator and signs it out everywhere. The last operator cannot be removed:
    /// with none, the first person to reach `/setup` on this machine would become one.
    pub async fn remove_operator(&self, name: &str) -> Result<()> {
        match store::delete_operator(&self.db, name).await? {
            store::Removal::Removed => {
                self.forget_sessions_of(name);
                Ok(())
            }
            store::Removal::NoSuchOperator => Err(no_such_operator(name)),
            store::Removal::LastOne => Err(Error::conflict(format!(
                "`{name}` is the only operator: add another first (`kennel operator add`), so someone can still sign in"
            ))),
        }
    }

    /// Sets an operator's password (the way back from a forgotten one, on the daemon's
    /// machine) and signs it out everywhere it was signed in.
    pub async fn set_password(&self, name: &str, password: &str) -> Result<()> {
        check_new_operator(name, password)?;
        let hash = hash_password(password).await?;
        if !store::set_password_hash(&self.db, name, &hash).await? {
            return Err(no_such_operator(name));
        }
        self.forget_sessions_of(name);
        Ok(())
    }

    pub async fn operator_count(&self) -> Result<i64> {
        store::operator_count(&self.db).await
    }
}
