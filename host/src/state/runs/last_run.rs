//! The last run's measurements as one short field (`airlock.lastRun`,
//! [`LastRun`]): how it is written, parsed strictly, and read from the
//! separate fields older hosts wrote.

use std::collections::HashMap;

use super::RunRecord;
use crate::state::fields;

/// A job's last run, measured: what `airlock.lastRun` holds, as
/// `<wall time ms> <peak memory bytes> <fuel used, or - unmetered>`, and
/// for a run that tried a request ` <requests> <refused> <bytes out>
/// <bytes in>`: 20 to 40 bytes, so the job hash stays a listpack (see the
/// module docs of `state::runs`). Read from Redis, so parsed strictly: anything else reads
/// as no measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LastRun {
    /// Wall time, ms, to the microsecond.
    pub wall_time_ms: f64,
    /// Peak linear memory, bytes.
    pub peak_memory_bytes: u64,
    /// Fuel used, when metered.
    pub fuel_used: Option<u64>,
    /// Outbound HTTP, for a run that tried a request.
    pub http: Option<airlock_core::run::HttpSummary>,
}

impl LastRun {
    /// The measurements of `run`.
    pub fn of_record(run: &RunRecord) -> LastRun {
        LastRun {
            wall_time_ms: run.wall_time_ms,
            peak_memory_bytes: run.peak_memory_bytes,
            fuel_used: run.fuel_used,
            http: (run.http.requests + run.http.refused > 0).then_some(run.http),
        }
    }

    /// The field's value.
    pub fn encode(&self) -> String {
        let mut text = format!(
            "{:.3} {} ",
            self.wall_time_ms.max(0.0),
            self.peak_memory_bytes
        );
        match self.fuel_used {
            Some(fuel) => text.push_str(&fuel.to_string()),
            None => text.push('-'),
        }
        if let Some(http) = &self.http {
            text.push_str(&format!(
                " {} {} {} {}",
                http.requests, http.refused, http.bytes_out, http.bytes_in
            ));
        }
        text
    }

    /// Parses a field's value; `None` for anything [`LastRun::encode`]
    /// does not write.
    pub fn parse(text: &str) -> Option<LastRun> {
        let parts: Vec<&str> = text.split(' ').collect();
        if parts.len() != 3 && parts.len() != 7 {
            return None;
        }
        let wall_time_ms: f64 = parts[0].parse().ok()?;
        if !wall_time_ms.is_finite() || wall_time_ms < 0.0 {
            return None;
        }
        let number = |i: usize| parts[i].parse::<u64>().ok();
        let fuel_used = match parts[2] {
            "-" => None,
            _ => Some(number(2)?),
        };
        let http = match parts.len() {
            7 => Some(airlock_core::run::HttpSummary {
                requests: number(3)?,
                refused: number(4)?,
                bytes_out: number(5)?,
                bytes_in: number(6)?,
            }),
            _ => None,
        };
        Some(LastRun {
            wall_time_ms,
            peak_memory_bytes: number(1)?,
            fuel_used,
            http,
        })
    }

    /// The last run's measurements in a job hash: `airlock.lastRun`, or
    /// the separate fields hosts before it wrote (`airlock.wallTimeMs`,
    /// `airlock.peakMemoryBytes`, `airlock.fuelUsed`, `airlock.http*`);
    /// `None` when the job has neither.
    pub fn of(fields: &HashMap<String, String>) -> Option<LastRun> {
        if let Some(text) = fields.get(fields::LAST_RUN) {
            return LastRun::parse(text);
        }
        let number = |name: &str| fields.get(name).and_then(|v| v.parse::<u64>().ok());
        let wall_time_ms: f64 = fields.get(fields::legacy::WALL_MS)?.parse().ok()?;
        let requests = number(fields::legacy::HTTP_REQUESTS);
        Some(LastRun {
            wall_time_ms,
            peak_memory_bytes: number(fields::legacy::MEMORY)?,
            fuel_used: number(fields::legacy::FUEL),
            http: requests.map(|requests| airlock_core::run::HttpSummary {
                requests,
                refused: number(fields::legacy::HTTP_REFUSED).unwrap_or(0),
                bytes_out: number(fields::legacy::HTTP_BYTES_OUT).unwrap_or(0),
                bytes_in: number(fields::legacy::HTTP_BYTES_IN).unwrap_or(0),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::LastRun;
    use crate::state::fields;
    use airlock_core::run::HttpSummary;
    use std::collections::HashMap;

    #[test]
    fn the_last_run_reads_back_as_it_was_written_and_stays_a_listpack_value() {
        let metered = LastRun {
            wall_time_ms: 12.3456,
            peak_memory_bytes: 1_114_112,
            fuel_used: Some(2_000_000_000),
            http: None,
        };
        let text = metered.encode();
        assert_eq!(text, "12.346 1114112 2000000000");
        let back = LastRun::parse(&text).unwrap();
        assert_eq!(back.fuel_used, Some(2_000_000_000));
        assert_eq!(back.wall_time_ms, 12.346);
        // The largest a run without requests writes: an hour, the largest
        // memory and fuel a host allows; under Redis's 64-byte listpack bound.
        let largest = LastRun {
            wall_time_ms: 3_600_000.0,
            peak_memory_bytes: 4 << 30,
            fuel_used: Some(u64::MAX),
            http: None,
        };
        assert!(largest.encode().len() <= 64, "{}", largest.encode());
        let http = LastRun {
            fuel_used: None,
            http: Some(HttpSummary {
                requests: 2,
                refused: 1,
                bytes_out: 10,
                bytes_in: 2048,
            }),
            ..metered
        };
        assert_eq!(http.encode(), "12.346 1114112 - 2 1 10 2048");
        assert_eq!(
            LastRun::parse(&http.encode()),
            Some(LastRun {
                wall_time_ms: 12.346,
                ..http
            })
        );
    }

    #[test]
    fn a_last_run_field_redis_holds_is_parsed_strictly() {
        for junk in [
            "",
            "1 2",
            "1 2 3 4",
            "NaN 1 2",
            "inf 1 2",
            "-1 1 2",
            "1 -2 3",
            "1 2 x",
            "1  2 3",
            "1 2 3 4 5 6 x",
        ] {
            assert_eq!(LastRun::parse(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn jobs_measured_by_older_hosts_keep_their_measurements() {
        let old: HashMap<String, String> = [
            (fields::legacy::WALL_MS, "3.5"),
            (fields::legacy::MEMORY, "65536"),
            (fields::legacy::FUEL, "42"),
            (fields::legacy::HTTP_REQUESTS, "1"),
            (fields::legacy::HTTP_BYTES_IN, "9"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let last = LastRun::of(&old).unwrap();
        assert_eq!(last.wall_time_ms, 3.5);
        assert_eq!(last.peak_memory_bytes, 65536);
        assert_eq!(last.fuel_used, Some(42));
        assert_eq!(last.http.unwrap().bytes_in, 9);
        // A newer record wins over leftovers of an older host's.
        let mut both = old.clone();
        both.insert(fields::LAST_RUN.into(), "1.000 2 -".into());
        assert_eq!(LastRun::of(&both).unwrap().fuel_used, None);
        assert_eq!(LastRun::of(&HashMap::new()), None);
    }
}
