//! The error every layer returns for input it cannot accept: the field to
//! blame, in the API's JSON spelling, and why; the HTTP API answers it
//! with a 400 whose body names the field.

/// An input that cannot be accepted, naming the field (in the API's JSON
/// spelling: `opts.priority`, `jobs[2].data`, `children[0].queue`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}`: {message}")]
pub struct FieldError {
    /// The field.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl FieldError {
    /// `field` is wrong because of `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same error one level down a path: `opts` + `delay` → `opts.delay`.
    pub fn under(self, parent: &str) -> Self {
        if parent.is_empty() {
            return self;
        }
        FieldError {
            field: format!("{parent}.{}", self.field),
            message: self.message,
        }
    }
}
