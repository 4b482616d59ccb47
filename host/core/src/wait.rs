//! What a durable wait waits for and how it ended: the guest's
//! `wait-for-event` and `wait-token` imports ask for a [`WaitFor`], and the
//! state that records waits answers a [`WaitOutcome`].

/// What a durable wait waits for.
#[derive(Debug, Clone, PartialEq)]
pub enum WaitFor {
    /// An event named `name`, holding `value` at the JSON path `path` of
    /// its data with `matching`. Which such events count (since when, and
    /// not those an earlier wait received) is the store's to say.
    Event {
        /// The event name.
        name: String,
        /// `(path, value)`: a JSON path into the event's data and the value
        /// it must hold there.
        matching: Option<(String, serde_json::Value)>,
    },
    /// The completion of the wait's token.
    Token,
}

/// How a durable wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitOutcome {
    /// What it waited for came: the event, or the token's result, as JSON
    /// text.
    Came(String),
    /// Its deadline passed first.
    TimedOut,
}

impl WaitOutcome {
    /// The value a guest's wait returns: `None` for a timeout.
    pub fn into_option(self) -> Option<String> {
        match self {
            WaitOutcome::Came(value) => Some(value),
            WaitOutcome::TimedOut => None,
        }
    }
}
