//! Each job option's field, written once: its name, type, JSON spelling,
//! bounds (the OpenAPI schema's) and description. [`job_options!`]
//! declares a struct of some of them — [`super::JobOptions`] and its
//! subsets — in the order named, with the subsets' conversions to and from
//! [`super::JobOptions`].

/// Declares `pub struct $name` with the named job-option fields, in that
/// order (each one's definition below), deriving what every job-options
/// type derives. With `subset`, also `to_job_options`, `with_defaults` and
/// `validate`, through [`super::JobOptions`].
macro_rules! job_options {
    // The fields, one rule each: the definition appended, then the rest.
    (@fields $attrs:tt $name:ident [$($done:tt)*] job_id $(, $rest:ident)*) => {
        job_options!(@fields $attrs $name [$($done)*
            /// A custom job id (not an integer, no `:`): adding a job whose id
            /// exists adds nothing.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schema(min_length = 1, max_length = 256, pattern = r"^[^:]*[^0-9:][^:]*$")]
            pub job_id: Option<String>,
        ] $($rest),*);
    };
    (@fields $attrs:tt $name:ident [$($done:tt)*] delay $(, $rest:ident)*) => {
        job_options!(@fields $attrs $name [$($done)*
            /// Milliseconds before the job may run (at most a year).
            #[serde(
                default,
                skip_serializing_if = "Option::is_none",
                deserialize_with = "crate::int::opt"
            )]
            #[schema(minimum = 0, maximum = 31_536_000_000_u64)]
            pub delay: Option<u64>,
        ] $($rest),*);
    };
    (@fields $attrs:tt $name:ident [$($done:tt)*] priority $(, $rest:ident)*) => {
        job_options!(@fields $attrs $name [$($done)*
            /// 1 (highest) to 2,097,152 (lowest); absent or 0 means no priority.
            #[serde(
                default,
                skip_serializing_if = "Option::is_none",
                deserialize_with = "crate::int::opt"
            )]
            #[schema(minimum = 0, maximum = 2_097_152)]
            pub priority: Option<u32>,
        ] $($rest),*);
    };
    (@fields $attrs:tt $name:ident [$($done:tt)*] lifo $(, $rest:ident)*) => {
        job_options!(@fields $attrs $name [$($done)*
            /// Take this job before older waiting ones (not with a priority).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub lifo: Option<bool>,
        ] $($rest),*);
    };
    (@fields $attrs:tt $name:ident [$($done:tt)*] attempts $(, $rest:ident)*) => {
        job_options!(@fields $attrs $name [$($done)*
            /// Attempts in total (1: never retried), at most 10,000.
            #[serde(
                default,
                skip_serializing_if = "Option::is_none",
                deserialize_with = "crate::int::opt"
            )]
            #[schema(minimum = 1, maximum = 10_000)]
            pub attempts: Option<u32>,
        ] $($rest),*);
    };
    (@fields $attrs:tt $name:ident [$($done:tt)*] backoff $(, $rest:ident)*) => {
        job_options!(@fields $attrs $name [$($done)*
            /// Delay between attempts. With `exponential`, the delay is capped by
            /// the attempts (so the longest wait stays within a year): a year
            /// divided by 2^(t − 2), t being the attempts rounded up to a multiple
            /// of 8.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub backoff: Option<Backoff>,
        ] $($rest),*);
    };
    (@fields $attrs:tt $name:ident [$($done:tt)*] remove_on_complete $(, $rest:ident)*) => {
        job_options!(@fields $attrs $name [$($done)*
            /// Retention of the job once completed.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub remove_on_complete: Option<Retention>,
        ] $($rest),*);
    };
    (@fields $attrs:tt $name:ident [$($done:tt)*] remove_on_fail $(, $rest:ident)*) => {
        job_options!(@fields $attrs $name [$($done)*
            /// Retention of the job once failed.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub remove_on_fail: Option<Retention>,
        ] $($rest),*);
    };
    (@fields $attrs:tt $name:ident [$($done:tt)*] deduplication $(, $rest:ident)*) => {
        job_options!(@fields $attrs $name [$($done)*
            /// Deduplication by id.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub deduplication: Option<Deduplication>,
        ] $($rest),*);
    };
    (@fields $attrs:tt $name:ident [$($done:tt)*] limits $(, $rest:ident)*) => {
        job_options!(@fields $attrs $name [$($done)*
            /// Sandbox limits for this job: may only lower the binding's.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub limits: Option<LimitsOverride>,
        ] $($rest),*);
    };
    // Every field appended: the struct.
    (@fields [$($attr:tt)*] $name:ident [$($done:tt)*]) => {
        $($attr)*
        #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct $name {
            $($done)*
        }
    };

    // `JobOptions` itself.
    ($(#[$attr:meta])* pub struct $name:ident { $($field:ident),* $(,)? }) => {
        job_options!(@fields [$(#[$attr])*] $name [] $($field),*);
    };

    // A subset of `JobOptions`.
    ($(#[$attr:meta])* pub struct $name:ident subset { $($field:ident),* $(,)? }) => {
        job_options!(@fields [$(#[$attr])*] $name [] $($field),*);

        impl $name {
            /// These options with absent fields filled from a binding's defaults.
            pub fn with_defaults(&self, defaults: &DefaultJobOptions) -> Self {
                let merged = self.to_job_options().with_defaults(defaults);
                $name {
                    $($field: merged.$field,)*
                }
            }

            /// Checks the options as [`JobOptions::validate`] does.
            pub fn validate(&self) -> Result<(), FieldError> {
                self.to_job_options().validate()
            }

            /// The same options as [`JobOptions`].
            pub fn to_job_options(&self) -> JobOptions {
                JobOptions {
                    $($field: self.$field.clone(),)*
                    ..JobOptions::default()
                }
            }
        }
    };
}
