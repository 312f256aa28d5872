//! TLS for agents dialed over `wss://`: rustls on the `ring` provider, the public roots
//! (`webpki-roots`) and any certificates the agent's config trusts besides. The name
//! checked is the URL's host, so a certificate for another name is refused.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// The TLS session over `tcp` to `target`, its certificate checked against the public
/// roots and `ca`, offering the protocols `alpn` (none: none said).
pub(crate) async fn connect(
    (host, shown): (&str, &str),
    ca: &[std::path::PathBuf],
    tcp: tokio::net::TcpStream,
    wait: std::time::Duration,
    alpn: &[&[u8]],
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let mut config = client_config(ca)?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let name = ServerName::try_from(host.to_string())
        .map_err(|_| format!("{}: not a name a certificate can be checked for", shown))?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    match tokio::time::timeout(wait, connector.connect(name, tcp)).await {
        Err(_) => Err(format!(
            "{}: no TLS answer within {} s",
            shown,
            wait.as_secs_f32()
        )),
        Ok(Err(e)) => Err(format!(
            "{}: the TLS handshake failed: {}",
            shown,
            in_words(&e)
        )),
        Ok(Ok(tls)) => Ok(tls),
    }
}

/// A TLS failure in plain words, with what to do where there is something to do.
fn in_words(e: &std::io::Error) -> String {
    use rustls::CertificateError as C;
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    if let Some(rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType)) = inner {
        return "it did not answer in TLS (does it serve plain ws:// or http:// there?)".into();
    }
    let Some(rustls::Error::InvalidCertificate(c)) = inner else {
        return e.to_string();
    };
    match c {
        C::UnknownIssuer => "its certificate is not signed by an authority trusted here (a private CA's or a self-signed certificate is trusted with ca = [\"PATH.pem\"] in the agent's entry)".into(),
        C::NotValidForName | C::NotValidForNameContext { .. } => {
            "its certificate is for another name than the URL's host".into()
        }
        C::Expired | C::ExpiredContext { .. } => format!("its certificate has expired ({c:?})"),
        C::NotValidYet | C::NotValidYetContext { .. } => "its certificate is not valid yet".into(),
        C::Revoked => "its certificate was revoked".into(),
        C::Other(o) if format!("{o:?}").contains("CaUsedAsEndEntity") => {
            "its certificate is a certificate authority's, not a server's (make the server's with basicConstraints=CA:FALSE, signed by that authority)".into()
        }
        other => format!("its certificate was refused ({other:?})"),
    }
}

/// Public roots and the config's own certificates.
fn client_config(ca: &[std::path::PathBuf]) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for path in ca {
        let mut found = 0;
        for cert in CertificateDer::pem_file_iter(path)
            .map_err(|e| format!("ca {}: {e}", path.display()))?
        {
            let cert = cert.map_err(|e| format!("ca {}: {e}", path.display()))?;
            roots
                .add(cert)
                .map_err(|e| format!("ca {}: {e}", path.display()))?;
            found += 1;
        }
        if found == 0 {
            return Err(format!("ca {}: no certificate in it", path.display()));
        }
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
}
