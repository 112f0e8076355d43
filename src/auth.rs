//! API keys: issued at random, shown once, stored only as a hash, revocable.
//!
//! A key reads `sf_<key_id>_<secret>`: `key_id` (96 random bits, hex) names the stored record and
//! is safe to print and log; `secret` (256 random bits, base64url) is checked against the stored
//! SHA-256 in constant time. Looking a key up by its id, not by its hash, keeps the comparison
//! itself the only place the secret is touched.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub use crate::store::KeyScope;
use crate::store::{KeyRow, MerchantRef, NewKey, Store, StoreError};

const PREFIX: &str = "sf_";
const KEY_ID_BYTES: usize = 12;
const SECRET_BYTES: usize = 32;

/// A freshly issued key: the only time the secret exists outside the client.
#[derive(Serialize)]
pub struct IssuedKey {
    pub merchant_id: String,
    pub key_id: String,
    pub api_key: String,
    #[serde(serialize_with = "scope_name")]
    pub scope: KeyScope,
}

fn scope_name<S: serde::Serializer>(scope: &KeyScope, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(scope.as_str())
}

/// Who a request's key speaks for, what it may call, and from which web origins (`None`: any the
/// service allows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub merchant: MerchantRef,
    pub scope: KeyScope,
    pub allowed_origins: Option<Vec<String>>,
}

/// What a new key is: its scope, and for a key the merchant makes, its label, its origins and the
/// bound on the merchant's storefront keys.
#[derive(Clone, Debug, Default)]
pub struct KeySpec {
    pub scope: KeyScope,
    pub label: Option<String>,
    pub allowed_origins: Option<Vec<String>>,
    pub storefront_below: Option<usize>,
}

impl std::fmt::Debug for IssuedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedKey")
            .field("merchant_id", &self.merchant_id)
            .field("key_id", &self.key_id)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// `N` random bytes, a failure of the source being one of the store's (it stops the command).
fn random<const N: usize>() -> Result<[u8; N], StoreError> {
    crate::secret::random().map_err(StoreError::backend)
}

fn hash(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// Issues a new key of `scope` for the merchant with public id `merchant_id` (the operator's).
pub async fn issue_key(store: &dyn Store, merchant_id: &str, scope: KeyScope) -> Result<IssuedKey, StoreError> {
    let spec = KeySpec {
        scope,
        ..KeySpec::default()
    };
    make_key(store, merchant_id, spec)
        .await?
        .map(|(issued, _)| issued)
        .ok_or_else(|| StoreError::NotFound(format!("merchant {merchant_id}")))
}

/// Makes a new key as `spec` says, for the merchant with public id `merchant_id`: the key, once,
/// and its stored row; `None` (nothing stored) past `spec.storefront_below`.
pub async fn make_key(
    store: &dyn Store,
    merchant_id: &str,
    spec: KeySpec,
) -> Result<Option<(IssuedKey, KeyRow)>, StoreError> {
    let key_id: String = random::<KEY_ID_BYTES>()?.iter().map(|b| format!("{b:02x}")).collect();
    let secret = URL_SAFE_NO_PAD.encode(random::<SECRET_BYTES>()?);
    let key = NewKey {
        merchant_id: merchant_id.to_owned(),
        key_id: key_id.clone(),
        secret_hash: hash(&secret),
        scope: spec.scope,
        label: spec.label,
        allowed_origins: spec.allowed_origins,
        storefront_below: spec.storefront_below,
    };
    let Some(row) = store.insert_key(key).await? else {
        return Ok(None);
    };
    let issued = IssuedKey {
        merchant_id: merchant_id.to_owned(),
        api_key: format!("{PREFIX}{key_id}_{secret}"),
        key_id,
        scope: spec.scope,
    };
    Ok(Some((issued, row)))
}

/// Creates a merchant and issues its first key (of the full scope).
pub async fn create_merchant(store: &dyn Store, name: &str) -> Result<IssuedKey, StoreError> {
    let merchant = store.create_merchant(name).await?;
    issue_key(store, &merchant.id, KeyScope::Full).await
}

/// Who a presented key speaks for; `None` for an unknown, malformed or revoked key.
pub async fn authenticate(store: &dyn Store, api_key: &str) -> Result<Option<Caller>, StoreError> {
    let Some((key_id, secret)) = api_key.strip_prefix(PREFIX).and_then(|rest| rest.split_once('_')) else {
        return Ok(None);
    };
    if key_id.len() != KEY_ID_BYTES * 2 || !key_id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let Some(stored) = store.find_key(key_id).await? else {
        return Ok(None);
    };
    let matches: bool = hash(secret).ct_eq(&stored.secret_hash).into();
    Ok(matches.then_some(Caller {
        merchant: stored.merchant,
        scope: stored.scope,
        allowed_origins: stored.allowed_origins,
    }))
}
