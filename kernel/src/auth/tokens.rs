//! API tokens (only a SHA-256 of each is stored, compared in constant time) and the CLI
//! token of this run (memory only, new at each start).

use hmac::{Hmac, Mac};
use rand::RngExt;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{Auth, check_name, store};
use crate::error::{Error, Result};

/// Prefix that makes a Kennel token recognisable in logs and secret scanners.
const TOKEN_PREFIX: &str = "kn_";
/// The prefix of the token the daemon makes for its own home's command line at each start.
pub(super) const CLI_TOKEN_PREFIX: &str = "kncli_";

#[derive(Debug, Clone, serde::Serialize)]
pub struct TokenInfo {
    pub name: String,
    pub created_at: String,
}

pub(super) struct TokenRecord {
    name: String,
    hash: [u8; 32],
}

/// A live API token a request presented: its name, and which token of that name it is (what
/// holds it open, a live stream, ends when this one is revoked, whatever is made after it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    pub name: String,
    hash: [u8; 32],
}

pub(super) fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The proof the daemon holding `token` gives for `challenge`: what a CLI that read `token`
/// from `cli.token` expects back before it sends the token. After a crash another local user
/// may take the daemon's port; without the token it cannot answer, and gets no token.
pub fn cli_proof_of(token: &str, challenge: &str) -> String {
    cli_proof(&token_hash(token), challenge)
}

/// HMAC-SHA256 of `challenge` keyed by the token's hash (the daemon keeps only the hash).
fn cli_proof(hash: &[u8; 32], challenge: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(hash).expect("HMAC takes any key length");
    mac.update(b"kennel-cli-proof:");
    mac.update(challenge.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

impl Auth {
    pub async fn reload(&self) -> Result<()> {
        let records = store::tokens(&self.db)
            .await?
            .into_iter()
            .filter_map(|t| {
                let mut hash = [0u8; 32];
                hex::decode_to_slice(&t.hash, &mut hash).ok()?;
                Some(TokenRecord { name: t.name, hash })
            })
            .collect();
        *self.tokens.write().expect("token lock") = records;
        self.revisions.send_modify(|r| *r += 1);
        Ok(())
    }

    /// Changes when a token or a session may have stopped being live.
    pub fn revisions(&self) -> tokio::sync::watch::Receiver<u64> {
        self.revisions.subscribe()
    }

    /// Whether `token` is still live: not revoked, even if a token of its name was made again.
    pub fn token_is_live(&self, token: &VerifiedToken) -> bool {
        self.tokens.read().expect("token lock").iter().any(|t| t.hash == token.hash)
    }

    /// Creates a token and returns it; this is the only time it can be seen.
    pub async fn create_token(&self, name: &str) -> Result<String> {
        check_name(name)?;
        let secret: [u8; 32] = rand::rng().random();
        let token = format!("{TOKEN_PREFIX}{}", hex::encode(secret));
        store::insert_token(&self.db, name, &hex::encode(token_hash(&token))).await?;
        self.reload().await?;
        Ok(token)
    }

    pub async fn revoke_token(&self, name: &str) -> Result<()> {
        if !store::delete_token(&self.db, name).await? {
            return Err(Error::not_found(format!("no token named `{name}`")));
        }
        self.reload().await
    }

    pub async fn list_tokens(&self) -> Result<Vec<TokenInfo>> {
        store::list_tokens(&self.db).await
    }

    /// Makes the token the command line of this home uses to reach this run of the daemon,
    /// replacing any earlier one. It lives only in memory (and in the file the daemon writes
    /// it to, readable by the home's owner alone), so each start makes a new one and a copy
    /// taken from an earlier run is worthless.
    pub fn issue_cli_token(&self) -> String {
        let secret: [u8; 32] = rand::rng().random();
        let token = format!("{CLI_TOKEN_PREFIX}{}", hex::encode(secret));
        *self.cli_token.write().expect("cli token lock") = Some(token_hash(&token));
        token
    }

    /// This run's answer to a CLI's `challenge`: proof that it is the daemon that wrote
    /// `cli.token`, given before the CLI sends the token anywhere ([`cli_proof_of`]). `None`
    /// before a CLI token is issued.
    pub fn prove_cli(&self, challenge: &str) -> Option<String> {
        let hash = (*self.cli_token.read().expect("cli token lock"))?;
        Some(cli_proof(&hash, challenge))
    }

    /// Whether `token` is this run's CLI token, compared in constant time.
    pub fn is_cli_token(&self, token: &str) -> bool {
        let presented = token_hash(token);
        self.cli_token.read().expect("cli token lock").is_some_and(|hash| bool::from(hash.ct_eq(&presented)))
    }

    /// The token, if it is live. Every stored hash is compared in constant time, so timing
    /// says nothing about which (or whether any) token nearly matched.
    pub fn verify_token(&self, token: &str) -> Option<VerifiedToken> {
        let presented = token_hash(token);
        let mut found = None;
        for record in self.tokens.read().expect("token lock").iter() {
            if bool::from(record.hash.ct_eq(&presented)) {
                found = Some(VerifiedToken { name: record.name.clone(), hash: record.hash });
            }
        }
        found
    }
}
