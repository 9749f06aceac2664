//! Waiting out NATS weather at start: a node started while its NATS server is down,
//! or while the JetStream cluster has no meta leader yet (`JetStream system
//! temporarily unavailable`), waits and tries again instead of exiting, so a host that
//! boots before its NATS cluster, or a heal that re-elects stream leaders, costs
//! nothing but time. What no retry can mend (refused credentials, a URL that does not
//! parse, a stream made with other settings) still ends the start with its error.

use std::future::Future;
use std::time::Duration;

/// The first wait between tries; it doubles up to [`WAIT_MAX`].
const WAIT_FIRST: Duration = Duration::from_millis(200);

/// The longest wait between tries.
const WAIT_MAX: Duration = Duration::from_secs(5);

/// Runs `attempt` until it succeeds or fails in a way no retry mends, waiting
/// between tries with a growing backoff and logging why (`what` names the step).
pub async fn until_up<T, F, Fut>(what: &str, mut attempt: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let mut wait = WAIT_FIRST;
    let mut tries = 0u32;
    loop {
        match attempt().await {
            Ok(value) => {
                if tries > 0 {
                    tracing::info!(tries = tries + 1, "{what}: NATS answered");
                }
                return Ok(value);
            }
            Err(e) if lasting(&e) => return Err(e),
            Err(e) => {
                tries += 1;
                tracing::warn!(
                    error = %format!("{e:#}"),
                    retry_in_ms = wait.as_millis() as u64,
                    tries,
                    "{what}: NATS or JetStream is not available; waiting"
                );
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(WAIT_MAX);
            }
        }
    }
}

/// Whether `e` is one no retry mends: credentials refused, a URL or certificate that
/// does not parse, a JetStream object that exists with other settings.
pub fn lasting(e: &anyhow::Error) -> bool {
    for cause in e.chain() {
        if let Some(connect) = cause.downcast_ref::<async_nats::ConnectError>() {
            use async_nats::ConnectErrorKind as K;
            if matches!(
                connect.kind(),
                K::Authentication | K::AuthorizationViolation | K::ServerParse | K::Tls
            ) {
                return true;
            }
            // An I/O error may still carry a TLS alert: the text below tells.
        }
    }
    let text = format!("{e:#}").to_ascii_lowercase();
    [
        "already in use",
        "authorization violation",
        "permissions violation",
        // TLS refused by the server (its alert: a missing or unknown client
        // certificate) or by this node (the server's certificate is not trusted).
        "fatal alert",
        "invalid peer certificate",
        // The settings' own files and URLs (`nats_connect`).
        "nats.creds:",
        "nats.nkey:",
        "is not a nats url",
    ]
    .iter()
    .any(|t| text.contains(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weather_is_waited_out_and_refusals_are_not() {
        assert!(!lasting(&anyhow::anyhow!(
            "JetStream system temporarily unavailable (503)"
        )));
        assert!(!lasting(&anyhow::anyhow!("timed out")));
        assert!(lasting(&anyhow::anyhow!(
            "stream name already in use with a different configuration"
        )));
        assert!(lasting(&anyhow::anyhow!("nats: Authorization Violation")));
    }

    #[tokio::test]
    async fn tries_again_until_it_works() {
        let mut n = 0;
        let got = until_up("test", || {
            n += 1;
            let now = n;
            async move {
                if now < 3 {
                    anyhow::bail!("JetStream system temporarily unavailable")
                }
                Ok(now)
            }
        })
        .await
        .unwrap();
        assert_eq!(got, 3);
        let refused: anyhow::Result<()> = until_up("test", || async {
            anyhow::bail!("Authorization Violation")
        })
        .await;
        assert!(refused.is_err());
    }
}
