//! The run's credentials: mutual TLS with certificates minted per run.
//!
//! At the start of a run the scheduler creates a throw-away certificate
//! authority (rcgen, ECDSA P-256) and signs two leaves with it: the
//! scheduler's server certificate (name [`SCHEDULER_NAME`]) and the run's
//! agent certificate (name [`AGENT_NAME`], usable as client and server, for
//! the control connection and for QUIC data streams between agents). It
//! writes to the run directory:
//!
//! | file | content |
//! |---|---|
//! | `run-ca.der` | the run CA's certificate: the only root an agent trusts (pinning) |
//! | `agent-cert.der` | the agent certificate |
//! | `agent-key.der` | its PKCS#8 private key (mode 0600) |
//!
//! The CA's private key never leaves the scheduler's memory, so no further
//! certificate of the run can be minted, and one from another run (another
//! CA) is refused in the handshake by both sides.

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The TLS name of the scheduler's certificate.
pub const SCHEDULER_NAME: &str = "ocslab-scheduler";
/// The TLS name of the run's agent certificate.
pub const AGENT_NAME: &str = "ocslab-agent";
/// File of the run CA's certificate in the run directory.
pub const CA_FILE: &str = "run-ca.der";
/// File of the agent certificate in the run directory.
pub const AGENT_CERT_FILE: &str = "agent-cert.der";
/// File of the agent key in the run directory.
pub const AGENT_KEY_FILE: &str = "agent-key.der";

/// Why credentials could not be made, read or used.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// Certificate generation failed.
    #[error("generating the run's certificates: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the material.
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// The client-certificate verifier could not be built.
    #[error("client verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn roots(ca: &CertificateDer<'static>) -> Result<Arc<rustls::RootCertStore>, CredentialError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone())?;
    Ok(Arc::new(roots))
}

/// Server config presenting `cert`, requiring a client certificate of the CA.
fn server_config(
    ca: &CertificateDer<'static>,
    cert: &CertificateDer<'static>,
    key: &[u8],
    alpn: &[u8],
) -> Result<rustls::ServerConfig, CredentialError> {
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(roots(ca)?, provider()).build()?;
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![cert.clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.to_vec())),
        )?;
    cfg.alpn_protocols = vec![alpn.to_vec()];
    Ok(cfg)
}

/// What an agent holds: the run CA to pin and the run's agent certificate.
#[derive(Clone)]
pub struct AgentCredentials {
    ca: CertificateDer<'static>,
    cert: CertificateDer<'static>,
    key: Vec<u8>,
}

impl std::fmt::Debug for AgentCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentCredentials").finish_non_exhaustive()
    }
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>, CredentialError> {
    let path = dir.join(name);
    std::fs::read(&path).map_err(|source| CredentialError::File { path, source })
}

impl AgentCredentials {
    /// Reads the credentials a scheduler wrote to `run_dir`.
    pub fn load(run_dir: &Path) -> Result<AgentCredentials, CredentialError> {
        Ok(AgentCredentials {
            ca: CertificateDer::from(read(run_dir, CA_FILE)?),
            cert: CertificateDer::from(read(run_dir, AGENT_CERT_FILE)?),
            key: read(run_dir, AGENT_KEY_FILE)?,
        })
    }

    /// Writes them to `run_dir`, the key with mode 0600. The directory
    /// must exist: it is never made here, so a writer racing the removal
    /// of a run directory (a teardown on Ctrl-C while a lab starts) fails
    /// instead of making the directory again and leaving it behind.
    pub fn write(&self, run_dir: &Path) -> Result<(), CredentialError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let err = |path: PathBuf| move |source| CredentialError::File { path, source };
        for (name, bytes, mode) in [
            (CA_FILE, &self.ca[..], 0o644),
            (AGENT_CERT_FILE, &self.cert[..], 0o644),
            (AGENT_KEY_FILE, &self.key[..], 0o600),
        ] {
            let path = run_dir.join(name);
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(mode)
                .open(&path)
                .map_err(err(path.clone()))?;
            f.write_all(bytes).map_err(err(path))?;
        }
        Ok(())
    }

    /// A client config that trusts only the run CA and presents the agent
    /// certificate.
    pub fn client_config(&self, alpn: &[u8]) -> Result<rustls::ClientConfig, CredentialError> {
        let mut cfg = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_root_certificates(roots(&self.ca)?)
            .with_client_auth_cert(
                vec![self.cert.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.clone())),
            )?;
        cfg.alpn_protocols = vec![alpn.to_vec()];
        Ok(cfg)
    }

    /// A server config for agent-to-agent QUIC data streams: presents the
    /// agent certificate, requires a client certificate of the run.
    pub fn server_config(&self, alpn: &[u8]) -> Result<rustls::ServerConfig, CredentialError> {
        server_config(&self.ca, &self.cert, &self.key, alpn)
    }
}

/// The scheduler's side: the run CA's products (its key is dropped once the
/// leaves are signed).
pub struct RunAuthority {
    ca: CertificateDer<'static>,
    server_cert: CertificateDer<'static>,
    server_key: Vec<u8>,
    agent: AgentCredentials,
}

impl std::fmt::Debug for RunAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunAuthority").finish_non_exhaustive()
    }
}

impl RunAuthority {
    /// Mints a fresh CA and its two leaves.
    pub fn generate() -> Result<RunAuthority, CredentialError> {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
            KeyUsagePurpose,
        };
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        // A name per run, so a certificate of another run fails as "unknown issuer".
        let run_tag: u64 = rand::random();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, format!("ocslab run CA {run_tag:016x}"));
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf = |name: &str, usages: Vec<ExtendedKeyUsagePurpose>| -> Result<_, CredentialError> {
            let key = KeyPair::generate()?;
            let mut p = CertificateParams::new(vec![name.to_string()])?;
            p.distinguished_name.push(DnType::CommonName, name);
            p.extended_key_usages = usages;
            let cert = p.signed_by(&key, &issuer)?;
            Ok((cert.der().clone(), key.serialize_der()))
        };
        let (server_cert, server_key) = leaf(SCHEDULER_NAME, vec![ExtendedKeyUsagePurpose::ServerAuth])?;
        let (agent_cert, agent_key) = leaf(
            AGENT_NAME,
            vec![
                ExtendedKeyUsagePurpose::ClientAuth,
                ExtendedKeyUsagePurpose::ServerAuth,
            ],
        )?;
        let ca = ca_cert.der().clone();
        Ok(RunAuthority {
            agent: AgentCredentials {
                ca: ca.clone(),
                cert: agent_cert,
                key: agent_key,
            },
            ca,
            server_cert,
            server_key,
        })
    }

    /// The credentials agents of this run use.
    pub fn agent_credentials(&self) -> &AgentCredentials {
        &self.agent
    }

    /// The scheduler's server config: its own certificate, agents' required.
    pub fn server_config(&self, alpn: &[u8]) -> Result<rustls::ServerConfig, CredentialError> {
        server_config(&self.ca, &self.server_cert, &self.server_key, alpn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_round_trip_through_a_run_directory() {
        let dir = std::env::temp_dir().join(format!("ocslab-cred-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let auth = RunAuthority::generate().unwrap();
        let missing = auth.agent_credentials().write(&dir);
        assert!(
            matches!(&missing, Err(CredentialError::File { path, .. }) if path.starts_with(&dir)),
            "a missing run directory is not made: {missing:?}"
        );
        assert!(!dir.exists());
        std::fs::create_dir(&dir).unwrap();
        auth.agent_credentials().write(&dir).unwrap();
        let loaded = AgentCredentials::load(&dir).unwrap();
        assert_eq!(loaded.cert, auth.agent.cert);
        assert_eq!(loaded.key, auth.agent.key);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join(AGENT_KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "key readable by others: {mode:o}");
        assert!(loaded.client_config(b"x").is_ok());
        assert!(auth.server_config(b"x").is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_file_names_its_path() {
        let e = AgentCredentials::load(Path::new("/nonexistent-ocslab-run")).unwrap_err();
        assert!(
            e.to_string().contains("/nonexistent-ocslab-run/run-ca.der"),
            "{e}"
        );
    }
}
