//! Who enqueued a job, sealed so a Redis writer cannot claim it: the layer
//! that adds jobs asks a [`ProducerSeal`] for the seal to store beside the
//! producer, without knowing the key or the cipher behind it (the
//! sandbox's `SecretsKey` is the one implementation).

/// Seals `producer` having enqueued job `id` of `queue` with this name and
/// data (JSON text).
pub trait ProducerSeal: Send + Sync {
    /// The seal to store beside the job's producer.
    fn producer_seal(
        &self,
        queue: &str,
        id: &str,
        producer: &str,
        name: &str,
        data: &str,
    ) -> String;

    /// Whether `seal` is [`ProducerSeal::producer_seal`] of the rest
    /// (compared in constant time).
    fn producer_seal_matches(
        &self,
        seal: &str,
        queue: &str,
        id: &str,
        producer: &str,
        name: &str,
        data: &str,
    ) -> bool;
}
