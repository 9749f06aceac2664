//! How many copies the cluster's streams and buckets keep when `[cluster]
//! stream_replicas` is not set: three when the NATS cluster can hold three (a lost NATS
//! server then loses nothing acknowledged), else one, with a warning that says so. Asked
//! of NATS itself by making a three-copy stream and removing it again, so a single
//! server, or a cluster with too few JetStream servers, is told apart from a
//! temporarily unavailable one (which is waited out).

use async_nats::jetstream::{self, stream};

/// Copies kept when NATS can hold them and the setting is unset.
pub const PREFERRED: usize = 3;

/// The copies to keep: `setting` if given, else [`PREFERRED`] if NATS takes a stream
/// of that many, else 1.
pub async fn choose(
    js: &jetstream::Context,
    cluster: &str,
    setting: Option<usize>,
) -> anyhow::Result<usize> {
    if let Some(n) = setting {
        return Ok(n);
    }
    let name = format!("shardkit_replicas_probe_{cluster}_{}", std::process::id());
    let made = crate::replication::jetstream::until_up::until_up(
        "asking NATS how many copies a stream can keep",
        || async {
            match js
                .create_stream(stream::Config {
                    name: name.clone(),
                    subjects: vec![format!(
                        "shardkit.replicas_probe.{cluster}.{}",
                        std::process::id()
                    )],
                    num_replicas: PREFERRED,
                    storage: stream::StorageType::Memory,
                    max_messages: 1,
                    ..Default::default()
                })
                .await
            {
                Ok(_) => Ok(true),
                Err(e) if cannot_hold(&e.to_string()) => Ok(false),
                Err(e) => Err(anyhow::Error::new(e)),
            }
        },
    )
    .await?;
    if made {
        let _ = js.delete_stream(&name).await;
        return Ok(PREFERRED);
    }
    tracing::warn!(
        "cluster.stream_replicas is not set and NATS cannot keep {PREFERRED} copies of a stream \
         (one server, or fewer than {PREFERRED} with JetStream): every group keeps one copy, so \
         losing that NATS server's disk loses what its groups acknowledged since their last \
         snapshot; run three NATS servers with JetStream, or set cluster.stream_replicas = 1 \
         to say one copy is meant"
    );
    Ok(1)
}

/// Whether NATS refused the stream for its copies, not for the moment: JetStream's
/// "replicas > 1 not supported in non-clustered mode" (10074) and "insufficient
/// resources" (10023).
fn cannot_hold(error: &str) -> bool {
    let error = error.to_ascii_lowercase();
    error.contains("non-clustered")
        || error.contains("insufficient resources")
        || error.contains("10074")
        || error.contains("10023")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_for_the_copies_are_told_from_weather() {
        assert!(cannot_hold(
            "replicas > 1 not supported in non-clustered mode (10074)"
        ));
        assert!(cannot_hold("insufficient resources"));
        assert!(!cannot_hold(
            "JetStream system temporarily unavailable (503)"
        ));
    }
}
