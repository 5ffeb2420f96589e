//! Authentication: what a connection sends in CONNECT and in answer to an AUTH_CHALLENGE.
//!
//! An [`AuthProvider`] names a Pulsar authentication method and produces its credentials.
//! It is asked again for every new connection and for every challenge, so a provider whose
//! credentials change (a token file rewritten by a sidecar, a callable minting short-lived
//! tokens) is picked up without restarting anything. Providers may block briefly (read a
//! file, call into Python); the connection calls them on Tokio's blocking pool.
//!
//! Secrets never appear in `Debug` output or error messages: [`Auth`]'s `Debug` shows the
//! method name only, and the built-in providers keep their secrets out of their errors.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;

use streamwire_core::error::{Error, ErrorKind, Result};

/// A Pulsar authentication method: its name (as the broker's provider knows it) and data.
pub trait AuthProvider: Send + Sync {
    /// The method name sent as `auth_method_name` ("token", "basic", "tls", ...).
    fn method_name(&self) -> &str;

    /// Fresh credentials for a new connection.
    fn auth_data(&self) -> Result<Bytes>;

    /// The answer to an AUTH_CHALLENGE carrying `challenge`. For token and basic auth the
    /// broker only asks for fresh credentials, so the default returns [`Self::auth_data`];
    /// multi-step methods (SASL-like) override this.
    fn respond(&self, challenge: &[u8]) -> Result<Bytes> {
        let _ = challenge;
        self.auth_data()
    }
}

/// A shared handle to an auth provider, cheap to clone into every connection.
#[derive(Clone)]
pub struct Auth(Arc<dyn AuthProvider>);

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Auth({:?}, <redacted>)", self.0.method_name())
    }
}

impl Auth {
    /// A static token (JWT or any string the broker's token provider accepts).
    pub fn token(token: impl Into<String>) -> Result<Auth> {
        let token = token.into();
        if token.trim().is_empty() {
            return Err(Error::new(ErrorKind::Config, "the auth token is empty"));
        }
        Ok(Auth(Arc::new(StaticToken(token))))
    }

    /// A token read from `path` on every use (so a rotated file is picked up).
    pub fn token_file(path: impl Into<PathBuf>) -> Auth {
        Auth(Arc::new(TokenFile(path.into())))
    }

    /// HTTP-basic-like credentials for Pulsar's `AuthenticationProviderBasic`.
    pub fn basic(user: impl Into<String>, password: impl Into<String>) -> Result<Auth> {
        let user = user.into();
        if user.is_empty() || user.contains(':') {
            return Err(Error::new(
                ErrorKind::Config,
                "basic auth user must be non-empty and must not contain ':'",
            ));
        }
        Ok(Auth(Arc::new(Basic {
            user,
            password: password.into(),
        })))
    }

    /// Any other method.
    pub fn custom(provider: Arc<dyn AuthProvider>) -> Auth {
        Auth(provider)
    }

    pub fn method_name(&self) -> &str {
        self.0.method_name()
    }

    pub fn provider(&self) -> &Arc<dyn AuthProvider> {
        &self.0
    }

    /// Fresh credentials, fetched on the blocking pool (providers may read files or call
    /// into Python). Errors are `Authentication` errors naming the method only.
    pub async fn fetch(&self) -> Result<Bytes> {
        self.run(|p| p.auth_data()).await
    }

    /// The answer to a challenge, fetched on the blocking pool.
    pub async fn respond(&self, challenge: Bytes) -> Result<Bytes> {
        self.run(move |p| p.respond(&challenge)).await
    }

    async fn run<F>(&self, f: F) -> Result<Bytes>
    where
        F: FnOnce(&dyn AuthProvider) -> Result<Bytes> + Send + 'static,
    {
        let provider = Arc::clone(&self.0);
        let method = provider.method_name().to_owned();
        let res = tokio::task::spawn_blocking(move || f(provider.as_ref()))
            .await
            .map_err(|e| {
                Error::new(
                    ErrorKind::Authentication,
                    format!("the {method:?} auth provider failed: {e}"),
                )
            })?;
        res.map_err(|e| {
            let kind = match e.kind() {
                ErrorKind::Interrupted => ErrorKind::Interrupted,
                _ => ErrorKind::Authentication,
            };
            Error::new(
                kind,
                format!(
                    "could not get credentials for auth method {method:?}: {}",
                    e.message()
                ),
            )
        })
    }
}

struct StaticToken(String);

impl AuthProvider for StaticToken {
    fn method_name(&self) -> &str {
        "token"
    }
    fn auth_data(&self) -> Result<Bytes> {
        Ok(Bytes::copy_from_slice(self.0.as_bytes()))
    }
}

struct TokenFile(PathBuf);

impl AuthProvider for TokenFile {
    fn method_name(&self) -> &str {
        "token"
    }
    fn auth_data(&self) -> Result<Bytes> {
        let raw = std::fs::read_to_string(&self.0).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("cannot read token file {}: {e}", self.0.display()),
            )
        })?;
        let token = raw.trim();
        if token.is_empty() {
            return Err(Error::new(
                ErrorKind::Config,
                format!("token file {} is empty", self.0.display()),
            ));
        }
        Ok(Bytes::copy_from_slice(token.as_bytes()))
    }
}

struct Basic {
    user: String,
    password: String,
}

impl AuthProvider for Basic {
    fn method_name(&self) -> &str {
        "basic"
    }
    fn auth_data(&self) -> Result<Bytes> {
        Ok(Bytes::from(format!("{}:{}", self.user, self.password)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn debug_is_redacted() {
        let a = Auth::token("s3cr3t-token").unwrap();
        let d = format!("{a:?}");
        assert!(!d.contains("s3cr3t"), "{d}");
        assert!(d.contains("token"), "{d}");
        let b = Auth::basic("alice", "hunter2").unwrap();
        assert!(!format!("{b:?}").contains("hunter2"));
    }

    #[test]
    fn static_and_basic_data() {
        let rt = rt();
        let a = Auth::token("abc").unwrap();
        assert_eq!(a.method_name(), "token");
        assert_eq!(rt.block_on(a.fetch()).unwrap(), Bytes::from_static(b"abc"));
        let b = Auth::basic("alice", "pw:with:colons").unwrap();
        assert_eq!(b.method_name(), "basic");
        assert_eq!(
            rt.block_on(b.respond(Bytes::from_static(b"refreshAuthData")))
                .unwrap(),
            Bytes::from_static(b"alice:pw:with:colons")
        );
        assert_eq!(Auth::token("  ").unwrap_err().kind(), ErrorKind::Config);
        assert_eq!(
            Auth::basic("a:b", "x").unwrap_err().kind(),
            ErrorKind::Config
        );
    }

    #[test]
    fn token_file_is_reread_and_errors_are_authentication() {
        let rt = rt();
        let dir = std::env::temp_dir().join(format!("sw-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "first\n").unwrap();
        let a = Auth::token_file(&path);
        assert_eq!(
            rt.block_on(a.fetch()).unwrap(),
            Bytes::from_static(b"first")
        );
        std::fs::write(&path, "second").unwrap();
        assert_eq!(
            rt.block_on(a.fetch()).unwrap(),
            Bytes::from_static(b"second")
        );
        std::fs::write(&path, "  \n").unwrap();
        let e = rt.block_on(a.fetch()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Authentication);
        assert!(e.message().contains("is empty"), "{e}");
        std::fs::remove_file(&path).unwrap();
        let e = rt.block_on(a.fetch()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Authentication);
        assert!(e.message().contains("cannot read token file"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
